//! `#[retry(...)]`'s arguments, in two steps: [`parse`] reads each `key = value` as written
//! (the value kept as tokens, so one bad value does not stop the others from being read), then
//! [`Config::validate`] checks each value and the rules across keys. Every mistake found is
//! reported, each at its own tokens.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Error, Expr, ExprLit, ExprPath, ExprUnary, Ident, Lit, LitStr, Path, Token, UnOp};

use crate::duration;
use crate::errors::Errors;
use crate::key::Key;
use crate::names::{self, JITTERS, POLICIES};
use crate::span::first_span;
use crate::suggest;

/// A validated value and where it was written, for spans in the expansion.
#[derive(Debug, Clone)]
pub(crate) struct At<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// Where the policy comes from.
#[derive(Debug)]
pub(crate) enum PolicyChoice {
    /// `availability`, the default.
    Default,
    /// A built-in, by the name of its `Policy` constant (`OUTAGE`).
    BuiltIn(At<&'static str>),
    /// The user's `const` of type `Policy`.
    Path(ExprPath),
}

/// What bounds the ladder's time.
#[derive(Debug, Clone)]
pub(crate) enum BudgetChoice {
    Turn,
    /// A literal budget, with its text as written, for the message when the ladder outlives it.
    Within {
        millis: u64,
        text: String,
    },
}

/// The attribute's arguments, validated.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) krate: Path,
    pub(crate) policy: PolicyChoice,
    pub(crate) attempts: Option<At<u32>>,
    pub(crate) base_ms: Option<At<u64>>,
    pub(crate) cap_ms: Option<At<u64>>,
    pub(crate) multiplier: Option<At<f64>>,
    /// The `Jitter` variant.
    pub(crate) jitter: Option<At<&'static str>>,
    pub(crate) budget: Option<At<BudgetChoice>>,
    /// Each attempt's timeout, in milliseconds.
    pub(crate) timeout: Option<At<u64>>,
    pub(crate) name: Option<LitStr>,
    pub(crate) quota: Option<ExprPath>,
    /// `Class` variants the policy retries too, and those it no longer retries.
    pub(crate) also_retry: Vec<At<&'static str>>,
    pub(crate) never_retry: Vec<At<&'static str>>,
}

/// Reads and validates the attribute's arguments; all the mistakes in them, combined, if any.
pub(crate) fn parse(args: TokenStream) -> syn::Result<Config> {
    let mut errors = Errors::default();
    let raw = read(args, &mut errors);
    let config = Config::validate(raw, &mut errors);
    errors.finish()?;
    Ok(config)
}

/// The first step: each key's value as written, in its place.
fn read(args: TokenStream, errors: &mut Errors) -> RawArgs {
    let mut raw = RawArgs::default();
    let args = strip_literals(args, errors);
    let parser = syn::meta::parser(|meta| raw.accept(meta, errors));
    if let Err(syntax) = parser.parse2(args) {
        errors.push_at(raw.seen, syntax);
    }
    raw
}

/// One `key = value` as written, and where in the attribute it was.
struct Given {
    key: Key,
    /// The key's tokens, for spans.
    ident: Ident,
    value: TokenStream,
    /// 0 for the first key: errors are reported in the order the keys were written.
    position: usize,
}

impl Given {
    fn name(&self) -> &'static str {
        self.key.name()
    }

    /// The value as an expression: every value the attribute accepts is one.
    fn expr(&self) -> syn::Result<Expr> {
        syn::parse2(self.value.clone()).map_err(|_| self.wrong_type())
    }

    /// "`key` takes ..., like `key = example`", on the value.
    fn wrong_type(&self) -> Error {
        let (name, kind, example) = (self.name(), self.key.kind(), self.key.example());
        self.error(format!("`{name}` takes {kind}, like `{name} = {example}`"))
    }

    /// An error on the value's tokens (on the key if the value is empty).
    fn error(&self, message: impl std::fmt::Display) -> Error {
        if self.value.is_empty() {
            Error::new(self.ident.span(), message)
        } else {
            Error::new_spanned(&self.value, message)
        }
    }

    /// The span of the value's first token, where the expansion points its checks.
    fn span(&self) -> Span {
        if self.value.is_empty() {
            self.ident.span()
        } else {
            first_span(&self.value)
        }
    }
}

/// The arguments as written, each key at most once; values unchecked.
#[derive(Default)]
struct RawArgs {
    /// Each key's value, at the key's index in [`Key::ALL`]: every key has its place.
    given: [Option<Given>; Key::ALL.len()],
    /// How many keys have been read.
    seen: usize,
}

impl RawArgs {
    fn get(&self, key: Key) -> Option<&Given> {
        self.given[key.index()].as_ref()
    }

    /// Where `key` was written, if it was; after every key if not.
    fn position(&self, key: Key) -> usize {
        self.get(key).map_or(usize::MAX, |given| given.position)
    }

    /// Reads one key and its value. Mistakes in them are recorded and reading goes on; only
    /// input that is not `key = tokens, ...` at all stops it.
    fn accept(&mut self, meta: ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<()> {
        let position = self.seen;
        self.seen += 1;
        let known = meta
            .path
            .get_ident()
            .and_then(|ident| Some((Key::named(&ident.to_string())?, ident.clone())));
        let Some((key, ident)) = known else {
            let error = bare_value(&meta.path).unwrap_or_else(|| unknown_key(&meta.path));
            errors.push_at(position, error);
            skip_value(meta.input)?;
            return Ok(());
        };
        if meta.input.peek(Token![:]) && !meta.input.peek(Token![::]) {
            meta.input.parse::<Token![:]>()?;
            let value = value_tokens(meta.input)?;
            let name = key.name();
            let written = value.to_string();
            errors.push_at(
                position,
                Error::new(
                    ident.span(),
                    format!("write `{name} = {written}`: a key takes its value after `=`, not `:`"),
                ),
            );
            return Ok(());
        }
        if !meta.input.peek(Token![=]) {
            let (name, example) = (key.name(), key.example());
            errors.push_at(
                position,
                Error::new(
                    ident.span(),
                    format!("`{name}` needs a value, like `{name} = {example}`"),
                ),
            );
            skip_value(meta.input)?;
            return Ok(());
        }
        meta.input.parse::<Token![=]>()?;
        let value = value_tokens(meta.input)?;
        let given = Given {
            key,
            ident,
            value,
            position,
        };
        errors.keep_at(position, once(&mut self.given[key.index()], given));
        Ok(())
    }
}

/// Stores a key's value, or rejects the key as given twice (the value stays the first one).
fn once(slot: &mut Option<Given>, given: Given) -> syn::Result<()> {
    if slot.is_some() {
        let key = &given.ident;
        return Err(Error::new(
            key.span(),
            format!("`{key}` is given twice; each key may appear once, so remove one"),
        ));
    }
    *slot = Some(given);
    Ok(())
}

/// The tokens up to the next top-level comma: the value, unparsed.
fn value_tokens(input: syn::parse::ParseStream<'_>) -> syn::Result<TokenStream> {
    let mut tokens = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        tokens.extend([input.parse::<TokenTree>()?]);
    }
    Ok(tokens)
}

/// Passes over whatever follows an unusable key, so the keys after it are still read.
fn skip_value(input: syn::parse::ParseStream<'_>) -> syn::Result<()> {
    value_tokens(input).map(drop)
}

/// A value written without its key (`#[retry(availability)]`): "write `policy = ...`".
fn bare_value(path: &Path) -> Option<Error> {
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
fn strip_literals(args: TokenStream, errors: &mut Errors) -> TokenStream {
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

fn unknown_key(path: &Path) -> Error {
    let written = quote::ToTokens::to_token_stream(path)
        .to_string()
        .replace(' ', "");
    let keys = Key::names();
    let hint = suggest::hint(&written, &keys, &Key::aliases());
    let expected = suggest::one_of(&keys, false);
    Error::new_spanned(
        path,
        format!("unknown key `{written}`; expected one of {expected}{hint}"),
    )
}

impl Config {
    /// Checks each value, then the rules across keys. Everything wrong goes to `errors`; the
    /// config returned is meaningful only if nothing was.
    fn validate(raw: RawArgs, errors: &mut Errors) -> Config {
        let mut config = Config::default();
        for given in raw.given.iter().flatten() {
            let at = given.position;
            match given.key {
                Key::Policy => {
                    config.policy = errors
                        .keep_at(at, policy(given))
                        .unwrap_or(PolicyChoice::Default);
                }
                Key::Attempts => config.attempts = errors.keep_at(at, attempts(given)),
                Key::BaseMs => config.base_ms = errors.keep_at(at, millis(given)),
                Key::CapMs => config.cap_ms = errors.keep_at(at, millis(given)),
                Key::Multiplier => config.multiplier = errors.keep_at(at, multiplier(given)),
                Key::Jitter => config.jitter = errors.keep_at(at, jitter(given)),
                Key::Budget => config.budget = errors.keep_at(at, budget(given)),
                Key::Timeout => config.timeout = errors.keep_at(at, timeout(given)),
                Key::Name => config.name = errors.keep_at(at, name(given)),
                Key::Quota => config.quota = errors.keep_at(at, quota(given)),
                Key::AlsoRetry => config.also_retry = class_list(given, errors),
                Key::NeverRetry => config.never_retry = class_list(given, errors),
                Key::Crate => {
                    if let Some(path) = errors.keep_at(at, krate(given)) {
                        config.krate = path;
                    }
                }
            }
        }
        config.check_across(&raw, errors);
        config
    }

    /// The configuration of `#[retry]` without arguments.
    fn default() -> Config {
        Config {
            krate: syn::parse_quote!(::retry_runtime),
            policy: PolicyChoice::Default,
            attempts: None,
            base_ms: None,
            cap_ms: None,
            multiplier: None,
            jitter: None,
            budget: None,
            timeout: None,
            name: None,
            quota: None,
            also_retry: Vec::new(),
            never_retry: Vec::new(),
        }
    }

    /// The rules that involve two keys; each error is reported with the later key.
    fn check_across(&self, raw: &RawArgs, errors: &mut Errors) {
        if let (Some(base), Some(cap)) = (&self.base_ms, &self.cap_ms)
            && cap.value < base.value
        {
            let (cap, base) = (cap.value, base.value);
            let message = format!(
                "`cap_ms = {cap}` is below `base_ms = {base}`; the cap bounds every wait, so \
                 raise `cap_ms` to at least {base} or lower `base_ms`"
            );
            let later = raw.position(Key::CapMs).max(raw.position(Key::BaseMs));
            errors.push_at(later, Error::new(self.cap_ms_span(), message));
        }
        for class in &self.also_retry {
            let why = match class.value {
                "Definitive" => {
                    "`Definitive` is an answer: the same request gets the same one, so it is \
                     never retried; remove it from `also_retry`"
                }
                "Cancelled" => {
                    "`Cancelled` is never retried: the work was cancelled or its deadline \
                     passed; remove it from `also_retry`"
                }
                _ => continue,
            };
            errors.push_at(raw.position(Key::AlsoRetry), Error::new(class.span, why));
        }
        for class in &self.never_retry {
            if self.also_retry.iter().any(|also| also.value == class.value) {
                let message = format!(
                    "`{}` is in both `also_retry` and `never_retry`; keep it in one",
                    class.value
                );
                errors.push_at(
                    raw.position(Key::NeverRetry),
                    Error::new(class.span, message),
                );
            }
        }
    }

    fn cap_ms_span(&self) -> Span {
        self.cap_ms
            .as_ref()
            .map_or_else(Span::call_site, |cap| cap.span)
    }
}

fn string(given: &Given) -> syn::Result<LitStr> {
    match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit),
        _ => Err(given.wrong_type()),
    }
}

fn krate(given: &Given) -> syn::Result<Path> {
    string(given)?.parse::<Path>().map_err(|_| {
        given.error(
            "`crate` takes the runtime crate's path as a string, like `crate = \"retry_runtime\"`",
        )
    })
}

fn policy(given: &Given) -> syn::Result<PolicyChoice> {
    match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => built_in_policy(&lit, given),
        Expr::Path(path) => {
            // `policy = outage`: a built-in's name, unquoted, is far likelier than a `const`
            // named in lowercase.
            if let Some(ident) = path.path.get_ident()
                && names::meaning(POLICIES, &ident.to_string()).is_some()
            {
                return Err(given.error(format!(
                    "a built-in policy is named by a string: write `policy = \"{ident}\"`"
                )));
            }
            Ok(PolicyChoice::Path(path))
        }
        _ => Err(given.wrong_type()),
    }
}

fn built_in_policy(lit: &LitStr, given: &Given) -> syn::Result<PolicyChoice> {
    let written = lit.value();
    match names::meaning(POLICIES, &written) {
        Some(konst) => Ok(PolicyChoice::BuiltIn(At {
            value: konst,
            span: lit.span(),
        })),
        None => {
            let known = names::written(POLICIES);
            Err(given.error(format!(
                "unknown policy `\"{written}\"`; the built-in policies are {}, or pass a path \
                 to your own `const` `Policy`, like `policy = crate::MODEL_POLICY`{}",
                suggest::one_of(&known, true),
                quoted_hint(&written, &known),
            )))
        }
    }
}

/// "; did you mean `\"x\"`?" for string-valued keys.
fn quoted_hint(written: &str, names: &[&str]) -> String {
    suggest::nearest(written, names, &[])
        .map(|near| format!("; did you mean `\"{near}\"`?"))
        .unwrap_or_default()
}

/// An integer literal as written, sign included.
fn integer(given: &Given) -> syn::Result<i128> {
    let (negative, lit) = match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => (false, lit),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match *expr {
            Expr::Lit(ExprLit {
                lit: Lit::Int(lit), ..
            }) => (true, lit),
            _ => return Err(given.wrong_type()),
        },
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) if lit.value().parse::<u64>().is_ok() => {
            let name = given.name();
            return Err(given.error(format!(
                "`{name}` takes a number, not a string: write `{name} = {}`",
                lit.value()
            )));
        }
        _ => return Err(given.wrong_type()),
    };
    if !lit.suffix().is_empty() {
        return Err(given.error(format!(
            "`{}` takes a plain whole number; remove the suffix `{}`",
            given.name(),
            lit.suffix()
        )));
    }
    let magnitude: i128 = lit
        .base10_parse()
        .map_err(|_| given.error(format!("`{}` is too large", given.name())))?;
    Ok(if negative { -magnitude } else { magnitude })
}

fn attempts(given: &Given) -> syn::Result<At<u32>> {
    let n = integer(given)?;
    if n == 0 {
        return Err(given.error(
            "`attempts = 0` makes no attempt at all; `attempts` counts the first call too, so use \
             `attempts = 1` for a call that is never retried",
        ));
    }
    if n < 0 {
        return Err(given
            .error("`attempts` counts the calls made, the first included, so it is at least 1"));
    }
    let value = u32::try_from(n)
        .map_err(|_| given.error(format!("`attempts` is too large; the most is {}", u32::MAX)))?;
    Ok(At {
        value,
        span: given.span(),
    })
}

/// `base_ms` and `cap_ms`: a positive number of milliseconds.
fn millis(given: &Given) -> syn::Result<At<u64>> {
    let name = given.name();
    let n = integer(given)?;
    if n == 0 {
        let why = if given.key == Key::BaseMs {
            "a ladder that does not back off hammers the far side while it is down"
        } else {
            "a cap of zero would make every wait zero"
        };
        return Err(given.error(format!(
            "`{name} = 0`: {why}; use at least 1 (milliseconds)"
        )));
    }
    if n < 0 {
        return Err(given.error(format!(
            "`{name}` is a wait in milliseconds and cannot be negative; use at least 1"
        )));
    }
    let value = u64::try_from(n)
        .map_err(|_| given.error(format!("`{name}` is too large; the most is {}", u64::MAX)))?;
    Ok(At {
        value,
        span: given.span(),
    })
}

fn multiplier(given: &Given) -> syn::Result<At<f64>> {
    let (value, suffix) = match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Float(lit),
            ..
        }) => (lit.base10_parse::<f64>()?, lit.suffix().to_owned()),
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => (lit.base10_parse::<f64>()?, lit.suffix().to_owned()),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => {
            return Err(given.error(
                "`multiplier` cannot be negative; use at least 1 (1 keeps every wait at `base_ms`)",
            ));
        }
        _ => return Err(given.wrong_type()),
    };
    if !suffix.is_empty() {
        return Err(given.error(format!(
            "`multiplier` takes a plain number; remove the suffix `{suffix}`"
        )));
    }
    if value < 1.0 {
        return Err(given.error(
            "`multiplier` below 1 would shrink the waits; use at least 1 (1 keeps every wait at \
             `base_ms`)",
        ));
    }
    // The policy keeps the multiplier in thousandths, in a u32.
    let most = f64::from(u32::MAX) / 1000.0;
    if value > most {
        return Err(given.error(format!(
            "`multiplier` is too large; the most is {}",
            most.floor()
        )));
    }
    Ok(At {
        value,
        span: given.span(),
    })
}

fn jitter(given: &Given) -> syn::Result<At<&'static str>> {
    let lit =
        string(given).map_err(|_| unquoted_hint(given).unwrap_or_else(|| given.wrong_type()))?;
    let written = lit.value();
    match names::meaning(JITTERS, &written) {
        Some(variant) => Ok(At {
            value: variant,
            span: lit.span(),
        }),
        None => {
            let known = names::written(JITTERS);
            Err(given.error(format!(
                "unknown jitter `\"{written}\"`; expected one of {}{}",
                suggest::one_of(&known, true),
                quoted_hint(&written, &known)
            )))
        }
    }
}

/// For a string key given a bare word (`jitter = full`): "write `jitter = \"full\"`".
fn unquoted_hint(given: &Given) -> Option<Error> {
    let Ok(Expr::Path(path)) = given.expr() else {
        return None;
    };
    let ident = path.path.get_ident()?;
    let name = given.name();
    Some(given.error(format!(
        "`{name}` takes a string: write `{name} = \"{ident}\"`"
    )))
}

/// A string key's literal: `budget` and `timeout`.
fn duration_string(given: &Given) -> syn::Result<LitStr> {
    match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit),
        // `budget = 2`: a number without a unit; `"2"` would be refused in turn.
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) if int.suffix().is_empty() => {
            let name = given.name();
            let n = int.base10_digits();
            Err(given.error(format!(
                "`{name}` takes a duration with its unit, in a string: write `{name} = \"{n}s\"` \
                 (or `\"{n}ms\"`, `\"{n}m\"`, `\"{n}h\"`)"
            )))
        }
        // `budget = 2s` lexes as the integer 2 with the suffix `s`.
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => {
            let name = given.name();
            Err(given.error(format!(
                "`{name}` takes a string: write `{name} = \"{int}\"`"
            )))
        }
        _ => Err(unquoted_hint(given).unwrap_or_else(|| given.wrong_type())),
    }
}

fn budget(given: &Given) -> syn::Result<At<BudgetChoice>> {
    let lit = duration_string(given)?;
    let text = lit.value();
    let value = if text == "turn" {
        BudgetChoice::Turn
    } else {
        let millis = duration::millis(&text)
            .map_err(|why| given.error(duration::message(Key::Budget, &text, why)))?;
        BudgetChoice::Within { millis, text }
    };
    Ok(At {
        value,
        span: lit.span(),
    })
}

/// `timeout`: a duration literal, as `budget` takes (but not `"turn"`: every attempt is
/// bounded by the turn already).
fn timeout(given: &Given) -> syn::Result<At<u64>> {
    let lit = duration_string(given)?;
    let text = lit.value();
    if text == "turn" {
        return Err(given.error(
            "every attempt is already bounded by the rest of the turn; `timeout` takes a \
             duration, like `timeout = \"30s\"`",
        ));
    }
    let millis = duration::millis(&text)
        .map_err(|why| given.error(duration::message(Key::Timeout, &text, why)))?;
    Ok(At {
        value: millis,
        span: lit.span(),
    })
}

fn name(given: &Given) -> syn::Result<LitStr> {
    let lit = string(given)?;
    if lit.value().is_empty() {
        return Err(
            given.error("`name` is empty; it names the call in notices, like `name = \"model\"`")
        );
    }
    Ok(lit)
}

fn quota(given: &Given) -> syn::Result<ExprPath> {
    match given.expr()? {
        Expr::Path(path) => Ok(path),
        Expr::Reference(reference) => Err(given.error(format!(
            "`quota` takes the path of a `static` `Quota` without `&`: write `quota = {}`",
            quote::ToTokens::to_token_stream(&reference.expr)
                .to_string()
                .replace(' ', "")
        ))),
        _ => Err(given.wrong_type()),
    }
}

/// `[A, B]` (or a single `A`): each a `Class` variant, each once. Every bad entry is reported.
fn class_list(given: &Given, errors: &mut Errors) -> Vec<At<&'static str>> {
    let entries: Vec<Expr> = match errors.keep_at(given.position, given.expr()) {
        Some(Expr::Array(array)) => array.elems.into_iter().collect(),
        Some(path @ Expr::Path(_)) => vec![path],
        Some(_) => {
            errors.push_at(given.position, given.wrong_type());
            return Vec::new();
        }
        None => return Vec::new(),
    };
    let list = given.name();
    let mut classes: Vec<At<&'static str>> = Vec::new();
    for entry in &entries {
        let Some(class) = errors.keep_at(given.position, class_name(entry, list)) else {
            continue;
        };
        if classes.iter().any(|c| c.value == class.value) {
            let message = format!("`{}` is listed twice in `{list}`", class.value);
            errors.push_at(given.position, Error::new(class.span, message));
            continue;
        }
        classes.push(class);
    }
    classes
}

/// One entry of a class list: `Timeout` or `Class::Timeout`.
fn class_name(entry: &Expr, list: &str) -> syn::Result<At<&'static str>> {
    if let Expr::Lit(ExprLit {
        lit: Lit::Str(lit), ..
    }) = entry
    {
        let written = lit.value();
        let name = names::class_by_variant(&written)
            .map(|class| class.variant)
            .or_else(|| suggest::nearest(&written, &names::class_variants(), &[]))
            .unwrap_or("Timeout");
        return Err(Error::new_spanned(
            entry,
            format!(
                "`{list}` names `Class` variants without quotes: write `{name}`, not `\"{written}\"`"
            ),
        ));
    }
    let Expr::Path(ExprPath {
        qself: None, path, ..
    }) = entry
    else {
        return Err(Error::new_spanned(
            entry,
            format!(
                "`{list}` lists `Class` variants by name, like `{list} = [Timeout, InvalidOutput]`"
            ),
        ));
    };
    let Some(last) = path.segments.last() else {
        return Err(Error::new_spanned(entry, "expected a `Class` variant"));
    };
    let written = last.ident.to_string();
    match names::class_by_variant(&written) {
        Some(class) => Ok(At {
            value: class.variant,
            span: last.ident.span(),
        }),
        None => Err(Error::new_spanned(
            entry,
            format!(
                "unknown class `{written}`; expected one of {}{}",
                suggest::one_of(&names::class_variants(), false),
                suggest::hint(&written, &names::class_variants(), &[])
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `key = example` for one key.
    fn example(key: Key) -> TokenStream {
        format!("{} = {}", key.name(), key.example())
            .parse()
            .unwrap_or_else(|e| panic!("{key:?}: {e}"))
    }

    #[test]
    fn every_key_is_read_into_its_own_place() {
        for &key in Key::ALL {
            let mut errors = Errors::default();
            let raw = read(example(key), &mut errors);
            errors.finish().unwrap_or_else(|e| panic!("{key:?}: {e}"));
            let read: Vec<Key> = raw.given.iter().flatten().map(|given| given.key).collect();
            assert_eq!(read, [key]);
            assert_eq!(raw.get(key).map(|given| given.position), Some(0));
        }
    }

    #[test]
    fn every_keys_example_is_a_value_it_accepts() {
        for &key in Key::ALL {
            if let Err(error) = parse(example(key)) {
                panic!("`{}`: {error}", example(key));
            }
        }
    }

    #[test]
    fn every_key_parses() {
        let args = quote::quote! {
            policy = "outage", attempts = 3, base_ms = 100, cap_ms = 1000, multiplier = 1.5,
            jitter = "full", budget = "1m", timeout = "5s", name = "op", quota = crate::Q,
            also_retry = [InvalidOutput], never_retry = RateLimited, crate = "::renamed",
        };
        let mut errors = Errors::default();
        let raw = read(args.clone(), &mut errors);
        assert_eq!(raw.given.iter().flatten().count(), Key::ALL.len());
        let config = parse(args).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            config.policy,
            PolicyChoice::BuiltIn(At {
                value: "OUTAGE",
                ..
            })
        ));
        assert_eq!(config.attempts.map(|a| a.value), Some(3));
        assert_eq!(config.multiplier.map(|m| m.value), Some(1.5));
        assert!(matches!(
            config.budget.map(|b| b.value),
            Some(BudgetChoice::Within { millis: 60_000, .. })
        ));
        assert_eq!(config.never_retry.len(), 1);
        assert_eq!(config.timeout.map(|t| t.value), Some(5_000));
    }

    #[test]
    fn no_arguments_is_the_default() {
        let config = parse(TokenStream::new()).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(config.policy, PolicyChoice::Default));
        assert!(config.budget.is_none() && config.also_retry.is_empty());
    }
}
