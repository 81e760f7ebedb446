//! The forms other retry libraries, config files and struct literals write, each answered
//! with ours: `#[retry(availability)]` and `#[retry("outage")]` (a value without its key),
//! `attempts: 3`, `attempts = "3"`, `budget = 2`, `jitter = full`, `policy = outage`,
//! `quota = &Q`, `also_retry = ["Timeout"]`. Each function gives the message for one form, so
//! `args` and `args::value` keep to the grammar of our own.

use proc_macro2::{TokenStream, TokenTree};
use syn::parse::ParseStream;
use syn::{Error, Expr, ExprPath, ExprReference, Ident, LitInt, LitStr, Path, Token};

use super::{Given, value_tokens};
use crate::errors::Errors;
use crate::names::{self, JITTERS, POLICIES};
use crate::retry::duration;
use crate::retry::key::Key;
use crate::suggest;

/// `attempts: 3`, as a struct literal or a config file writes it: "write `attempts = 3`".
/// `None`, and nothing read, if the key is not followed by a lone `:`.
pub(super) fn colon_for_equals(
    input: ParseStream<'_>,
    key: Key,
    ident: &Ident,
) -> syn::Result<Option<Error>> {
    if !input.peek(Token![:]) || input.peek(Token![::]) {
        return Ok(None);
    }
    input.parse::<Token![:]>()?;
    let value = value_tokens(input)?;
    let name = key.name();
    let written = value.to_string();
    Ok(Some(Error::new(
        ident.span(),
        format!("write `{name} = {written}`: a key takes its value after `=`, not `:`"),
    )))
}

/// A value written without its key (`#[retry(availability)]`): "write `policy = ...`".
pub(super) fn bare_value(path: &Path) -> Option<Error> {
    let word = path.get_ident()?.to_string();
    let key = key_for_value(&word)?;
    Some(Error::new_spanned(
        path,
        format!("`{word}` is a {key}'s name, not a key: write `{key} = \"{word}\"`"),
    ))
}

/// The key a bare value belongs to, if it is one of the names a key takes.
fn key_for_value(word: &str) -> Option<&'static str> {
    if names::meaning(POLICIES, word).is_some() {
        Some("policy")
    } else if names::meaning(JITTERS, word).is_some() {
        Some("jitter")
    } else {
        None
    }
}

/// `#[retry("outage")]`: a literal where a key belongs. Each is reported with the key it
/// most likely lacks, and taken out, so the keys around it are still read.
pub(super) fn strip_literals(args: TokenStream, errors: &mut Errors) -> TokenStream {
    let mut kept = TokenStream::new();
    let mut entry: Vec<TokenTree> = Vec::new();
    let mut position = 0;
    let mut flush =
        |entry: &mut Vec<TokenTree>, comma: Option<TokenTree>, kept: &mut TokenStream| {
            if let [TokenTree::Literal(literal)] = entry.as_slice() {
                errors.push_at(position, literal_without_key(literal));
            } else {
                kept.extend(entry.iter().cloned());
                kept.extend(comma);
            }
            entry.clear();
            position += 1;
        };
    for token in args {
        match &token {
            TokenTree::Punct(punct) if punct.as_char() == ',' => {
                flush(&mut entry, Some(token), &mut kept);
            }
            _ => entry.push(token),
        }
    }
    if !entry.is_empty() {
        flush(&mut entry, None, &mut kept);
    }
    kept
}

fn literal_without_key(literal: &proc_macro2::Literal) -> Error {
    let written = literal.to_string();
    let text = syn::parse_str::<LitStr>(&written)
        .ok()
        .map(|lit| lit.value());
    let key = match text.as_deref() {
        Some("turn") => Some("budget"),
        Some(text) if duration::millis(text).is_ok() => Some("budget"),
        Some(text) => key_for_value(text),
        None => None,
    };
    let message = match key {
        Some(key) => format!("name the key: write `{key} = {written}`"),
        None => format!(
            "`{written}` needs a key: `#[retry]` takes `key = value` pairs, like \
             `policy = \"outage\"` or `attempts = 3`"
        ),
    };
    Error::new(literal.span(), message)
}

/// `attempts = "3"`: a number in a string, "write `attempts = 3`"; any other string is the
/// wrong type.
pub(super) fn number_in_string(given: &Given, lit: &LitStr) -> Error {
    if lit.value().parse::<u64>().is_err() {
        return given.wrong_type();
    }
    let name = given.name();
    given.error(format!(
        "`{name}` takes a number, not a string: write `{name} = {}`",
        lit.value()
    ))
}

/// `budget = 2` (a number without a unit; `"2"` would be refused in turn) and `budget = 2s`
/// (which lexes as the integer 2 with the suffix `s`): the duration goes in a string.
pub(super) fn unquoted_duration(given: &Given, int: &LitInt) -> Error {
    let name = given.name();
    if int.suffix().is_empty() {
        let n = int.base10_digits();
        given.error(format!(
            "`{name}` takes a duration with its unit, in a string: write `{name} = \"{n}s\"` \
             (or `\"{n}ms\"`, `\"{n}m\"`, `\"{n}h\"`)"
        ))
    } else {
        given.error(format!(
            "`{name}` takes a string: write `{name} = \"{int}\"`"
        ))
    }
}

/// For a string key given a bare word (`jitter = full`): "write `jitter = \"full\"`".
pub(super) fn unquoted_word(given: &Given) -> Option<Error> {
    let Ok(Expr::Path(path)) = given.expr() else {
        return None;
    };
    let ident = path.path.get_ident()?;
    let name = given.name();
    Some(given.error(format!(
        "`{name}` takes a string: write `{name} = \"{ident}\"`"
    )))
}

/// `policy = outage`: a built-in's name, unquoted, is far likelier than a `const` named in
/// lowercase. `None` for any other path, which is the user's `const`.
pub(super) fn unquoted_policy(given: &Given, path: &ExprPath) -> Option<Error> {
    let ident = path.path.get_ident()?;
    names::meaning(POLICIES, &ident.to_string())?;
    Some(given.error(format!(
        "a built-in policy is named by a string: write `policy = \"{ident}\"`"
    )))
}

/// `quota = &Q`: the attribute borrows the `static` itself.
pub(super) fn borrowed_quota(given: &Given, reference: &ExprReference) -> Error {
    given.error(format!(
        "`quota` takes the path of a `static` `Quota` without `&`: write `quota = {}`",
        quote::ToTokens::to_token_stream(&reference.expr)
            .to_string()
            .replace(' ', "")
    ))
}

/// `also_retry = ["Timeout"]`: variants are named without quotes.
pub(super) fn quoted_class(entry: &Expr, lit: &LitStr, list: &str) -> Error {
    let written = lit.value();
    let name = names::class_by_variant(&written)
        .map(|class| class.variant)
        .or_else(|| suggest::nearest(&written, &names::class_variants(), &[]))
        .unwrap_or("Timeout");
    Error::new_spanned(
        entry,
        format!(
            "`{list}` names `Class` variants without quotes: write `{name}`, not `\"{written}\"`"
        ),
    )
}
