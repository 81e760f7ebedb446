//! Secrets stay out of what the library emits: [`Redacted`] shows an error's text with URL
//! queries and userinfo, credential headers, bearer tokens and API-key shapes removed.
//!
//! Every error text the library hands to tracing, to a hook or to a person goes through it:
//! the `error` field of [`RetryEvent`](crate::notice::RetryEvent) and of the tracing events, and
//! [`GaveUp`](crate::GaveUp)'s `Display` and `Debug`. The caller's own error inside `GaveUp`
//! is untouched. Redaction is lazy: nothing is formatted or allocated unless something shows
//! the text.
//!
//! What it removes:
//! - a URL's query string, fragment and userinfo (scheme, host and path stay);
//! - the values of `Authorization`, `Proxy-Authorization`, `api-key`, `x-api-key` and
//!   `x-goog-api-key`, in a header line, a JSON echo or a query parameter;
//! - a `Bearer` token anywhere;
//! - key shapes: `sk-...` (OpenAI, Anthropic's `sk-ant-...`) and `AIza...` (Google).
//!
//! ```
//! use retry_runtime::redact::Redacted;
//!
//! let error = "error sending request for url (https://user:pw@api.example.com/v1/models?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv)";
//! assert_eq!(
//!     Redacted::new(&error).to_string(),
//!     "error sending request for url (https://api.example.com/v1/models?[redacted])",
//! );
//! let echoed = r#"{"message": "bad header", "authorization": "Bearer sk-proj-abcdef0123456789"}"#;
//! assert_eq!(
//!     Redacted::new(&echoed).to_string(),
//!     r#"{"message": "bad header", "authorization": "[redacted]"}"#,
//! );
//! ```
//!
//! A program can add a rule of its own for a secret shape the built-in rules do not know; it
//! runs after them, on every text the library emits:
//!
//! ```
//! use retry_runtime::redact::{self, Redacted};
//!
//! redact::set_rule(|text: &mut String| {
//!     if let Some(at) = text.find("tenant=") {
//!         text.truncate(at + "tenant=".len());
//!         text.push_str("[redacted]");
//!     }
//! });
//! assert_eq!(Redacted::new(&"denied for tenant=acme-42").to_string(), "denied for tenant=[redacted]");
//! redact::clear_rule();
//! ```

use std::fmt::{self, Write as _};
use std::sync::{Arc, RwLock};

/// What replaces a secret.
const MARK: &str = "[redacted]";

/// Header and parameter names whose values are credentials, lowercase.
const CREDENTIAL_NAMES: [&str; 5] = [
    "proxy-authorization",
    "authorization",
    "x-goog-api-key",
    "x-api-key",
    "api-key",
];

type Rule = Arc<dyn Fn(&mut String) + Send + Sync>;

static RULE: RwLock<Option<Rule>> = RwLock::new(None);

/// Add a redaction rule of the program's own, run after the built-in ones on every text the
/// library emits (replacing any rule set before). Keep it quick: it runs whenever an event is
/// shown.
pub fn set_rule(rule: impl Fn(&mut String) + Send + Sync + 'static) {
    *RULE.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(rule));
}

/// Remove the program's own rule.
pub fn clear_rule() {
    *RULE.write().unwrap_or_else(|e| e.into_inner()) = None;
}

/// An error's text with secrets removed, computed only when it is formatted.
///
/// Its `Display` and `Debug` both show the redacted text of what it wraps (the wrapped
/// value's `Display`, or its `Debug` for [`Redacted::debug`]). It gives no way back to the
/// raw text.
#[derive(Clone, Copy)]
pub struct Redacted<'a>(Shown<'a>);

#[derive(Clone, Copy)]
enum Shown<'a> {
    Display(&'a dyn fmt::Display),
    Debug(&'a dyn fmt::Debug),
}

impl<'a> Redacted<'a> {
    /// The redacted `Display` text of `value`.
    pub fn new(value: &'a dyn fmt::Display) -> Redacted<'a> {
        Redacted(Shown::Display(value))
    }

    /// The redacted `Debug` text of `value`.
    ///
    /// ```
    /// use retry_runtime::redact::Redacted;
    /// let request = ("GET", "https://example.com/v1?token=abc");
    /// assert_eq!(format!("{}", Redacted::debug(&request)), r#"("GET", "https://example.com/v1?[redacted]")"#);
    /// ```
    pub fn debug(value: &'a dyn fmt::Debug) -> Redacted<'a> {
        Redacted(Shown::Debug(value))
    }

    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut raw = String::new();
        match self.0 {
            Shown::Display(value) => write!(raw, "{value}")?,
            Shown::Debug(value) => write!(raw, "{value:?}")?,
        }
        let mut text = redact(&raw);
        let rule = RULE.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(rule) = rule {
            rule(&mut text);
        }
        f.write_str(&text)
    }
}

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f)
    }
}

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f)
    }
}

/// `text` with the built-in rules applied.
pub(crate) fn redact(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let starts_word = at == 0 || !is_word(bytes[at - 1]);
        let found = if starts_word {
            url(text, at)
                .or_else(|| credential(text, at))
                .or_else(|| bearer(text, at))
                .or_else(|| key_shape(text, at))
        } else {
            None
        };
        match found {
            Some((end, replacement)) => {
                out.push_str(&text[copied..at]);
                out.push_str(&replacement);
                copied = end;
                at = end;
            }
            None => at += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-')
}

/// Where a value (a URL, a header value) ends in running text.
fn ends_value(byte: u8) -> bool {
    byte.is_ascii_whitespace() || matches!(byte, b'"' | b'\'' | b'<' | b'>' | b')' | b']' | b'}')
}

fn starts_with_ignore_case(text: &[u8], prefix: &str) -> bool {
    text.len() >= prefix.len() && text[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// A URL at `at`: kept as scheme, host and path.
fn url(text: &str, at: usize) -> Option<(usize, String)> {
    let bytes = text.as_bytes();
    let scheme_len = bytes[at..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
        .count();
    if scheme_len == 0 || !bytes[at].is_ascii_alphabetic() {
        return None;
    }
    let rest = at + scheme_len;
    if !bytes[rest..].starts_with(b"://") {
        return None;
    }
    let end = bytes[rest..]
        .iter()
        .position(|b| ends_value(*b))
        .map_or(bytes.len(), |len| rest + len);
    let after_scheme = rest + 3;
    let address_end = bytes[after_scheme..end]
        .iter()
        .position(|b| matches!(b, b'?' | b'#'))
        .map_or(end, |len| after_scheme + len);
    let address = &text[after_scheme..address_end];
    let authority_len = address.find('/').unwrap_or(address.len());
    let (authority, path) = address.split_at(authority_len);
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let mut kept = format!("{}://{host}{path}", &text[at..rest]);
    if address_end < end {
        kept.push('?');
        kept.push_str(MARK);
    }
    Some((end, kept))
}

/// A credential header or parameter at `at`: `name: value`, `"name": "value"`, `name=value`.
fn credential(text: &str, at: usize) -> Option<(usize, String)> {
    let bytes = text.as_bytes();
    let name = CREDENTIAL_NAMES
        .iter()
        .find(|name| starts_with_ignore_case(&bytes[at..], name))?;
    let mut cursor = at + name.len();
    if bytes.get(cursor).is_some_and(|b| is_token(*b)) {
        return None; // a longer word, such as `authorization_url`
    }
    if bytes.get(cursor) == Some(&b'"') {
        cursor += 1;
    }
    cursor += spaces(&bytes[cursor..]);
    if !matches!(bytes.get(cursor), Some(b':' | b'=')) {
        return None;
    }
    cursor += 1;
    cursor += spaces(&bytes[cursor..]);
    if bytes.get(cursor) == Some(&b'"') {
        cursor += 1;
    }
    // A value runs to the end of its line or field: `Bearer abc` is one value.
    let value_end = bytes[cursor..]
        .iter()
        .position(|b| matches!(b, b'\r' | b'\n' | b'"' | b',' | b';' | b'&' | b'}'))
        .map_or(bytes.len(), |len| cursor + len);
    let value = text[cursor..value_end].trim_end();
    if value.is_empty() {
        return None;
    }
    Some((cursor + value.len(), format!("{}{MARK}", &text[at..cursor])))
}

/// `Bearer <token>` at `at`.
fn bearer(text: &str, at: usize) -> Option<(usize, String)> {
    let bytes = text.as_bytes();
    if !starts_with_ignore_case(&bytes[at..], "bearer") {
        return None;
    }
    let gap = spaces(&bytes[at + 6..]);
    if gap == 0 {
        return None;
    }
    let start = at + 6 + gap;
    let len = bytes[start..]
        .iter()
        .take_while(|b| !ends_value(**b) && !matches!(b, b',' | b';'))
        .count();
    if len == 0 {
        return None;
    }
    Some((start + len, format!("{}{MARK}", &text[at..start])))
}

/// An API key's shape at `at`: `sk-` and at least 8 more key characters, or `AIza` and at
/// least 20.
fn key_shape(text: &str, at: usize) -> Option<(usize, String)> {
    let bytes = text.as_bytes();
    let (prefix, least) = if bytes[at..].starts_with(b"sk-") {
        (3, 8)
    } else if bytes[at..].starts_with(b"AIza") {
        (4, 20)
    } else {
        return None;
    };
    let len = bytes[at + prefix..]
        .iter()
        .take_while(|b| is_token(**b))
        .count();
    (len >= least).then(|| (at + prefix + len, MARK.to_owned()))
}

fn spaces(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take_while(|b| **b == b' ' || **b == b'\t')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_query_and_userinfo_go_and_the_host_and_path_stay() {
        assert_eq!(
            redact("GET http://u:p@h:8080/a/b?key=s#frag failed"),
            "GET http://h:8080/a/b?[redacted] failed"
        );
    }

    #[test]
    fn a_url_without_query_is_unchanged() {
        let text = "error sending request for url (http://127.0.0.1:1/v1/models)";
        assert_eq!(redact(text), text);
    }

    #[test]
    fn credential_headers_lose_their_values_in_every_spelling() {
        assert_eq!(
            redact("Authorization: Bearer abc.def\nx-api-key: k1"),
            "Authorization: [redacted]\nx-api-key: [redacted]"
        );
        assert_eq!(
            redact(r#"{"x-goog-api-key":"k2","ok":1}"#),
            r#"{"x-goog-api-key":"[redacted]","ok":1}"#
        );
        assert_eq!(redact("api-key=k3&b=2"), "api-key=[redacted]&b=2");
    }

    #[test]
    fn bearer_tokens_and_key_shapes_go_anywhere() {
        assert_eq!(redact("got bearer eyJhbGciOi."), "got bearer [redacted]");
        assert_eq!(
            redact("Incorrect API key provided: sk-ant-api03-AbCdEf012345."),
            "Incorrect API key provided: [redacted]."
        );
        assert_eq!(
            redact("key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv"),
            "key [redacted]"
        );
    }

    #[test]
    fn ordinary_words_are_left_alone() {
        let text = "task-runner: disk-full; authorization_url is fine; sk-short";
        assert_eq!(redact(text), text);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        #[test]
        fn any_text_is_redacted_without_panicking(text in any::<String>()) {
            let _ = redact(&text);
        }

        #[test]
        fn a_key_never_survives_whatever_surrounds_it(
            before in "[ -~]{0,40}",
            key in "[A-Za-z0-9]{20,60}",
            after in "[ -~]{0,40}",
        ) {
            for text in [
                format!("{before} sk-{key} {after}"),
                format!("{before} https://h/p?key={key} {after}"),
                format!("{before} Authorization: Bearer {key}\n{after}"),
            ] {
                prop_assert!(!redact(&text).contains(&key), "{}", text);
            }
        }
    }
}
