//! `#[retry(...)]`'s arguments, in two steps: [`parse`] reads each `key = value` as written
//! (the value kept as tokens, so one bad value does not stop the others from being read), then
//! [`Config::validate`] reads each value as its key's kind ([`read`]), checks it ([`value`])
//! and the rules across keys. Every mistake
//! found is reported, each at its own tokens; the forms other libraries write are recognised
//! and answered in [`foreign`].

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Error, Expr, ExprPath, Ident, LitStr, Path, Token};

use super::key::Key;
use super::span::first_span;
use crate::errors::Errors;
use crate::suggest;

mod foreign;
mod read;
mod value;

use read::Value;

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
    /// A path to the `static` `Upstream` the calls share.
    pub(crate) upstream: Option<ExprPath>,
    pub(crate) across: Option<ExprPath>,
    /// What each attempt costs of the upstream's key in tokens.
    pub(crate) tokens: Option<Expr>,
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
    let args = foreign::strip_literals(args, errors);
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
        let (name, kind, example) = (self.name(), self.key.kind().describe(), self.key.example());
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
            let error = foreign::bare_value(&meta.path).unwrap_or_else(|| unknown_key(&meta.path));
            errors.push_at(position, error);
            skip_value(meta.input)?;
            return Ok(());
        };
        if let Some(error) = foreign::colon_for_equals(meta.input, key, &ident)? {
            errors.push_at(position, error);
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
            let Some(value) = errors.keep_at(at, read::read(given)) else {
                continue;
            };
            match (given.key, value) {
                (Key::Policy, Value::PolicyName(lit)) => {
                    if let Some(policy) = errors.keep_at(at, value::built_in_policy(given, &lit)) {
                        config.policy = policy;
                    }
                }
                (Key::Policy, Value::Path(path)) => config.policy = PolicyChoice::Path(path),
                (Key::Attempts, Value::WholeNumber(n)) => {
                    config.attempts = errors.keep_at(at, value::attempts(given, n));
                }
                (Key::BaseMs, Value::WholeNumber(n)) => {
                    config.base_ms = errors.keep_at(at, value::millis(given, n));
                }
                (Key::CapMs, Value::WholeNumber(n)) => {
                    config.cap_ms = errors.keep_at(at, value::millis(given, n));
                }
                (Key::Multiplier, Value::Number { value: m, suffix }) => {
                    config.multiplier = errors.keep_at(at, value::multiplier(given, m, &suffix));
                }
                (Key::Multiplier, Value::Negative) => {
                    errors.push_at(at, value::negative_multiplier(given));
                }
                (Key::Jitter, Value::Text(lit)) => {
                    config.jitter = errors.keep_at(at, value::jitter(given, &lit));
                }
                (Key::Budget, Value::Text(lit)) => {
                    config.budget = errors.keep_at(at, value::budget(given, &lit));
                }
                (Key::Timeout, Value::Text(lit)) => {
                    config.timeout = errors.keep_at(at, value::timeout(given, &lit));
                }
                (Key::Name, Value::Text(lit)) => {
                    config.name = errors.keep_at(at, value::name(given, lit))
                }
                (Key::Quota, Value::Path(path)) => config.quota = Some(path),
                (Key::Upstream, Value::Path(path)) => config.upstream = Some(path),
                (Key::Across, Value::Path(path)) => config.across = Some(path),
                (Key::Tokens, Value::Expr(expr)) => config.tokens = Some(*expr),
                (Key::AlsoRetry, Value::Entries(entries)) => {
                    config.also_retry = value::class_list(given, &entries, errors);
                }
                (Key::NeverRetry, Value::Entries(entries)) => {
                    config.never_retry = value::class_list(given, &entries, errors);
                }
                (Key::Crate, Value::Text(lit)) => {
                    if let Some(path) = errors.keep_at(at, value::krate(given, &lit)) {
                        config.krate = path;
                    }
                }
                // `read` gives each key only the values of its kind, so this is never reached.
                (_, _) => errors.push_at(at, given.wrong_type()),
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
            upstream: None,
            across: None,
            tokens: None,
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
        if let (Some(_), Some(across)) = (&self.upstream, &self.across) {
            let message = "`upstream` and `across` both say where the attempts go; keep \
                           `across` and list the upstream in its `Upstreams`, or keep `upstream` \
                           alone";
            let later = raw.position(Key::Upstream).max(raw.position(Key::Across));
            let span = if later == raw.position(Key::Across) {
                first_span(across)
            } else {
                self.upstream
                    .as_ref()
                    .map_or_else(Span::call_site, first_span)
            };
            errors.push_at(later, Error::new(span, message));
        }
        if let (Some(tokens), None) = (&self.tokens, &self.upstream) {
            let message = if self.across.is_some() {
                "`tokens` is what each attempt costs of one upstream's key, and works with \
                 `upstream = ..` only; across a set, each upstream's pacer counts requests"
            } else {
                "`tokens` is what each attempt costs of an upstream's key: add `upstream = \
                 PATH` (a `static` `Upstream`) for it to be paced, or remove `tokens`"
            };
            let at = raw.position(Key::Tokens);
            errors.push_at(at, Error::new(first_span(tokens), message));
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
            // `tokens` is a cost on an upstream's key, and needs one.
            let example = match key {
                Key::Tokens => {
                    let tokens = example(key);
                    quote::quote!(upstream = crate::MODEL, #tokens)
                }
                _ => example(key),
            };
            if let Err(error) = parse(example.clone()) {
                panic!("`{example}`: {error}");
            }
        }
    }

    #[test]
    fn every_key_parses() {
        let args = quote::quote! {
            policy = "outage", attempts = 3, base_ms = 100, cap_ms = 1000, multiplier = 1.5,
            jitter = "full", budget = "1m", timeout = "5s", name = "op", quota = crate::Q,
            upstream = crate::MODEL, tokens = 1,
            also_retry = [InvalidOutput], never_retry = RateLimited, crate = "::renamed",
        };
        let mut errors = Errors::default();
        // `across` and `upstream` are read alike, and refused together.
        let every = quote::quote!(#args across = crate::MODELS);
        let raw = read(every.clone(), &mut errors);
        assert_eq!(raw.given.iter().flatten().count(), Key::ALL.len());
        assert!(parse(every).is_err());
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
