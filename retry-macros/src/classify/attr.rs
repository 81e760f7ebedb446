//! `#[classify(...)]` as written: each entry read into a typed [`Entry`], wherever it stands.
//! Which entries may stand where (on the type, a variant, a field) is [`valid`](super::valid)'s
//! business; here an entry is only recognised, and a misspelt one gets its suggestion.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::meta::ParseNestedMeta;
use syn::{Attribute, Error, Expr, ExprLit, Ident, Lit, Path, Token};

use crate::errors::Errors;
use crate::names;
use crate::suggest;

/// Every other word `#[classify(...)]` knows, for "did you mean".
const KEYWORDS: &[&str] = &[
    "from",
    "transparent",
    "with",
    "retry_after",
    "default",
    "crate",
];

/// Words from other libraries and from HTTP, mapped to ours.
const ALIASES: &[(&str, &str)] = &[
    ("source", "from"),
    ("delegate", "from"),
    ("permanent", "definitive"),
    ("fatal", "definitive"),
    ("answer", "definitive"),
    ("overloaded", "unavailable"),
    ("busy", "unavailable"),
    ("network", "transport"),
    ("connection", "transport"),
    ("connect", "transport"),
    ("timed_out", "timeout"),
    ("throttled", "rate_limited"),
    ("too_many_requests", "rate_limited"),
    ("quota", "quota_exhausted"),
    ("canceled", "cancelled"),
    ("hint", "retry_after"),
    ("retryafter", "retry_after"),
];

/// A class word and where it was written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Word {
    /// The attribute's spelling: `rate_limited`.
    pub(crate) name: &'static str,
    /// The `Class` variant: `RateLimited`.
    pub(crate) variant: &'static str,
    /// Whether this class carries a `retry_after` hint.
    pub(crate) takes_hint: bool,
    pub(crate) span: Span,
}

/// One entry of `#[classify(...)]`.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// `transport`, `unavailable`, ...: a class.
    Class(Word),
    /// `from` or `transparent`: classify as a field does.
    From(Ident),
    /// `with = path`: a `fn(&Self) -> Class`.
    With(Ident, Path),
    /// `retry_after`: this field holds the hint.
    RetryAfter(Ident),
    /// `default = word`: the class of an enum's undecided variants.
    Default(Ident, Word),
    /// `crate = "path"`: where the runtime is.
    Crate(Ident, Path),
}

impl Entry {
    /// The entry's keyword, for messages.
    pub(crate) fn keyword(&self) -> &Ident {
        match self {
            Entry::From(key)
            | Entry::With(key, _)
            | Entry::RetryAfter(key)
            | Entry::Default(key, _)
            | Entry::Crate(key, _) => key,
            Entry::Class(_) => unreachable!("a class has no keyword"),
        }
    }

    /// Where the entry was written.
    pub(crate) fn span(&self) -> Span {
        match self {
            Entry::Class(word) => word.span,
            _ => self.keyword().span(),
        }
    }

    /// The entry as the user wrote it, for messages: `transport`, `with = ...`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Entry::Class(word) => word.name.to_owned(),
            Entry::From(key) | Entry::RetryAfter(key) => key.to_string(),
            Entry::With(_, path) => format!("with = {}", path_text(path)),
            Entry::Default(_, word) => format!("default = {}", word.name),
            Entry::Crate(_, path) => format!("crate = \"{}\"", path_text(path)),
        }
    }
}

/// Reads every `#[classify(...)]` among `attrs`; other attributes are left alone. A mistake in
/// one entry is recorded in `errors` and reading goes on with the next.
pub(crate) fn entries(attrs: &[Attribute], errors: &mut Errors) -> Vec<Entry> {
    let mut entries = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("classify")) {
        if attr.meta.require_list().is_err() {
            errors.push(Error::new_spanned(
                attr,
                "`#[classify]` needs a decision in parentheses, like `#[classify(unavailable)]`, \
                 `#[classify(from)]` or `#[classify(with = path)]`",
            ));
            continue;
        }
        let result = attr.parse_nested_meta(|meta| {
            if let Some(entry) = entry(&meta, errors)? {
                entries.push(entry);
            }
            Ok(())
        });
        if let Err(error) = result {
            errors.push(error);
        }
    }
    entries
}

/// One entry; `None` with its mistake in `errors` if it is not one. Only input that is not
/// `word, key = tokens, ...` at all is an `Err`, which stops the attribute.
fn entry(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Option<Entry>> {
    let Some(key) = meta.path.get_ident().cloned() else {
        errors.push(unknown(&meta.path));
        skip_value(meta)?;
        return Ok(None);
    };
    let name = key.to_string();
    let takes_value = matches!(name.as_str(), "with" | "default" | "crate");
    let has_value = meta.input.peek(Token![=]);
    if !takes_value && (has_value || !meta.input.is_empty() && !meta.input.peek(Token![,])) {
        if is_known(&name) {
            errors.push(Error::new(
                key.span(),
                format!("`{name}` takes no value; write `#[classify({name})]`"),
            ));
        } else {
            errors.push(unknown(&meta.path));
        }
        skip_value(meta)?;
        return Ok(None);
    }
    if takes_value && !has_value {
        let example = match name.as_str() {
            "with" => "with = classify_io",
            "default" => "default = definitive",
            _ => "crate = \"retry_runtime\"",
        };
        errors.push(Error::new(
            key.span(),
            format!("`{name}` needs a value, like `#[classify({example})]`"),
        ));
        skip_value(meta)?;
        return Ok(None);
    }
    let entry = match name.as_str() {
        "from" | "transparent" => Entry::From(key),
        "retry_after" => Entry::RetryAfter(key),
        "with" => match path_value(meta, "with", "classify_io")? {
            Ok(path) => Entry::With(key, path),
            Err(error) => return Ok(record(errors, error)),
        },
        "crate" => match path_value(meta, "crate", "\"retry_runtime\"")? {
            Ok(path) => Entry::Crate(key, path),
            Err(error) => return Ok(record(errors, error)),
        },
        "default" => {
            let value = value_tokens(meta)?;
            match syn::parse2::<Ident>(value.clone()) {
                Ok(word) => match class_word(&word) {
                    Ok(class) => Entry::Default(key, class),
                    Err(error) => return Ok(record(errors, error)),
                },
                Err(_) => {
                    return Ok(record(
                        errors,
                        Error::new_spanned(
                            value,
                            format!(
                                "`default` takes a class, like `default = definitive`; one of {}",
                                class_list()
                            ),
                        ),
                    ));
                }
            }
        }
        _ => match class_word(&key) {
            Ok(word) => Entry::Class(word),
            Err(error) => return Ok(record(errors, error)),
        },
    };
    Ok(Some(entry))
}

fn record(errors: &mut Errors, error: Error) -> Option<Entry> {
    errors.push(error);
    None
}

/// `word` as a class, or "unknown" with the nearest word.
fn class_word(word: &Ident) -> syn::Result<Word> {
    let written = word.to_string();
    match names::class_by_word(&written) {
        Some(class) => Ok(Word {
            name: class.word,
            variant: class.variant,
            takes_hint: class.takes_hint,
            span: word.span(),
        }),
        None => Err(unknown_word(&written, word.span())),
    }
}

/// A path value, written bare (`with = my::classify`) or in a string (`crate = "my_retry"`).
/// The outer `Result` stops the attribute, the inner one is this entry's mistake.
fn path_value(
    meta: &ParseNestedMeta<'_>,
    key: &str,
    example: &str,
) -> syn::Result<syn::Result<Path>> {
    meta.input.parse::<Token![=]>()?;
    let value = value_tokens(meta)?;
    let wrong = || {
        Error::new_spanned(
            &value,
            format!("`{key}` takes a path, like `#[classify({key} = {example})]`"),
        )
    };
    Ok(match syn::parse2::<Expr>(value.clone()) {
        Ok(Expr::Path(path)) if path.qself.is_none() => Ok(path.path),
        Ok(Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        })) => lit.parse::<Path>().map_err(|_| wrong()),
        _ => Err(wrong()),
    })
}

/// The tokens up to the next top-level comma (after the `=`, if it is still there).
fn value_tokens(meta: &ParseNestedMeta<'_>) -> syn::Result<TokenStream> {
    if meta.input.peek(Token![=]) {
        meta.input.parse::<Token![=]>()?;
    }
    let mut tokens = TokenStream::new();
    while !meta.input.is_empty() && !meta.input.peek(Token![,]) {
        tokens.extend([meta.input.parse::<TokenTree>()?]);
    }
    Ok(tokens)
}

/// Passes over whatever follows an unusable entry, so the entries after it are still read.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    value_tokens(meta).map(drop)
}

fn is_known(name: &str) -> bool {
    names::class_by_word(name).is_some() || KEYWORDS.contains(&name)
}

fn unknown(path: &Path) -> Error {
    Error::new_spanned(path, unknown_message(&path_text(path)))
}

fn unknown_word(written: &str, span: Span) -> Error {
    Error::new(span, unknown_message(written))
}

/// "unknown word `trasport` ...; did you mean `transport`?"
fn unknown_message(written: &str) -> String {
    let mut candidates = names::class_words();
    candidates.extend(KEYWORDS);
    let hint = suggest::hint(written, &candidates, ALIASES);
    format!(
        "unknown word `{written}` in `#[classify(...)]`; expected a class, one of {}, or \
         `from`, `with = path`{hint}",
        class_list()
    )
}

/// The class words, each in backticks.
pub(crate) fn class_list() -> String {
    suggest::one_of(&names::class_words(), false)
}

pub(crate) fn path_text(path: &Path) -> String {
    quote::ToTokens::to_token_stream(path)
        .to_string()
        .replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_class_gets_the_nearest_word() {
        assert!(unknown_message("trasport").ends_with("did you mean `transport`?"));
        assert!(unknown_message("canceled").ends_with("did you mean `cancelled`?"));
        assert!(unknown_message("RateLimited").ends_with("did you mean `rate_limited`?"));
    }

    #[test]
    fn other_libraries_words_map_to_ours() {
        assert!(unknown_message("source").ends_with("did you mean `from`?"));
        assert!(unknown_message("permanent").ends_with("did you mean `definitive`?"));
        assert!(unknown_message("overloaded").ends_with("did you mean `unavailable`?"));
    }
}
