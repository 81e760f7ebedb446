//! The annotated item: an `async fn` with a body, returning something. The body is kept as
//! tokens, unparsed: the expansion only moves it, and rustc reports its own syntax errors.

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::{
    AttrStyle, Attribute, Error, FnArg, GenericArgument, Item, Pat, PathArguments, ReceiverKind,
    ReturnType, Signature, Token, Type, Visibility, braced, token,
};

use super::span::first_span;
use crate::errors::Errors;

/// An `async fn` that `#[retry]` can rewrite.
pub(crate) struct RetryFn {
    /// The outer attributes, then the body's inner ones turned outer (an inner attribute
    /// cannot stay inside the block the body moves into).
    pub(crate) attrs: Vec<Attribute>,
    pub(crate) vis: Visibility,
    pub(crate) sig: Signature,
    pub(crate) brace: token::Brace,
    /// The body's statements, without the braces.
    pub(crate) stmts: TokenStream,
    /// The declared return type.
    pub(crate) output: Type,
}

/// `unsafe async fn`: rustc has already said "`async` must come before `unsafe`", with the
/// fix; a message of ours would be a second one for the same mistake.
pub(crate) fn rustc_reports(item: &TokenStream) -> bool {
    let words: Vec<String> = item
        .clone()
        .into_iter()
        .filter_map(|token| match token {
            TokenTree::Ident(ident) => Some(ident.to_string()),
            _ => None,
        })
        .take_while(|word| word != "fn")
        .collect();
    words
        .windows(2)
        .any(|pair| pair[0] == "unsafe" && pair[1] == "async")
}

/// Reads the item as a function `#[retry]` can rewrite; every reason it cannot, if not.
pub(crate) fn parse(item: TokenStream) -> syn::Result<RetryFn> {
    let Candidate(Some(parsed)) = syn::parse2::<Candidate>(item.clone())? else {
        return Err(not_a_function(item));
    };
    let mut errors = Errors::default();
    for attr in &parsed.attrs {
        if is_retry(attr) {
            errors.push(Error::new_spanned(
                attr,
                "`#[retry]` is written twice on this function: a ladder inside a ladder; merge \
                 the keys into one `#[retry(...)]`",
            ));
        }
    }
    // `#[instrument]` above: its expansion (tracing-attributes 0.1) names its span so. A mark
    // of its internals, not a promise: if it changes, rustc's own errors come back, and the
    // README names the order that works.
    if parsed.sig.asyncness.is_some()
        && contains_ident(parsed.stmts.clone(), &|ident| {
            ident == "__tracing_attr_span"
        })
    {
        errors.push(Error::new(
            parsed.sig.fn_token.span,
            "`#[tracing::instrument]` above `#[retry]` has already moved this body into an \
             `async move` block of its own, which a retry could not run twice; write `#[retry]` \
             first, above `#[instrument]`, so one span covers the call and its retries",
        ));
    }
    if let Err(error) = check(&parsed.sig, &parsed.stmts) {
        errors.push(error);
    }
    errors.finish()?;
    let output = check(&parsed.sig, &parsed.stmts)?;
    let Parsed {
        attrs,
        vis,
        sig,
        brace,
        stmts,
    } = parsed;
    Ok(RetryFn {
        attrs,
        vis,
        sig,
        brace,
        stmts,
        output,
    })
}

/// What the attribute was put on: a function, or something else (`None`).
struct Candidate(Option<Parsed>);

/// A function as written, before its signature is checked.
struct Parsed {
    attrs: Vec<Attribute>,
    vis: Visibility,
    sig: Signature,
    brace: token::Brace,
    stmts: TokenStream,
}

impl Parse for Candidate {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        if input.fork().parse::<Signature>().is_err() {
            input.parse::<TokenStream>()?;
            return Ok(Candidate(None));
        }
        let sig: Signature = input.parse()?;
        if input.peek(Token![;]) {
            let semi: Token![;] = input.parse()?;
            return Err(Error::new(
                semi.span,
                "`#[retry]` needs the function's body to retry it; put the attribute on the \
                 method's implementation, not on its declaration",
            ));
        }
        let content;
        let brace = braced!(content in input);
        for mut inner in content.call(Attribute::parse_inner)? {
            inner.style = AttrStyle::Outer;
            attrs.push(inner);
        }
        let stmts: TokenStream = content.parse()?;
        Ok(Candidate(Some(Parsed {
            attrs,
            vis,
            sig,
            brace,
            stmts,
        })))
    }
}

/// `#[retry]` or `#[retry_runtime::retry]`: a second attribute of ours on the same function.
fn is_retry(attr: &Attribute) -> bool {
    let segments: Vec<String> = attr
        .path()
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    matches!(
        segments
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["retry"] | ["retry_runtime", "retry"]
    )
}

/// The signature's mistakes, all of them; the return type if there are none.
fn check(sig: &Signature, stmts: &TokenStream) -> syn::Result<Type> {
    let mut errors = Errors::default();
    if let Some(konst) = &sig.constness {
        errors.push(Error::new(
            konst.span,
            "`#[retry]` cannot retry a `const fn`: retrying waits between attempts, which a \
             `const fn` cannot do; remove `const` and write `async fn`",
        ));
    } else if sig.asyncness.is_none() {
        errors.push(not_async(sig, stmts));
    }
    let output = match &sig.output {
        ReturnType::Type(_, ty) => Some((**ty).clone()),
        ReturnType::Default => {
            errors.push(no_return_type(sig));
            None
        }
    };
    if let Some(error) = output.as_ref().and_then(not_a_result) {
        errors.push(error);
    } else if let Some(error) = output.as_ref().and_then(foreign_error) {
        errors.push(error);
    }
    // A plain `fn` returning `impl Future<...>` is told to write `async fn`, once: its
    // `impl` is the future an `async fn` would make, not a second mistake.
    if let Some(impl_token) = output
        .as_ref()
        .filter(|_| sig.asyncness.is_some())
        .and_then(|ty| find_impl(ty.to_token_stream()))
    {
        // Each attempt's output is annotated with the return type, where `impl Trait` is
        // not allowed; saying so here beats rustc's message about a `let` the user never wrote.
        // A stream is the one case where naming the type is the wrong advice: retrying the
        // call that opens it would never retry the stream's own failures.
        let message = if impl_token.stream {
            "`#[retry]` retries a call, not a stream: it would retry opening this stream and \
             never what fails inside it; return the stream from a plain `async fn` and retry it \
             with `Retry::stream(open)`, which retries until the stream's first content \
             (`.commit_when(sse::is_content)`) and never replays what it delivered"
        } else {
            "`#[retry]` cannot retry a function whose return type uses `impl Trait`: each \
             attempt's output is typed with it; name the type, or box it"
        };
        errors.push(Error::new(impl_token.keyword.span(), message));
    }
    errors.finish()?;
    output.ok_or_else(|| no_return_type(sig))
}

/// A return type that is visibly not a `Result` (`Option<T>`, `u32`, `()`, a reference, a
/// tuple): "`#[retry]` needs a `Result`", on it. A path the macro cannot see through (an alias,
/// `io::Result<T>`) is left to the type check in the expansion.
fn not_a_result(ty: &Type) -> Option<Error> {
    let visibly_not = match ty {
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            const NOT_RESULTS: &[&str] = &[
                "Option",
                "Vec",
                "String",
                "Box",
                "Poll",
                "ControlFlow",
                "bool",
                "char",
                "str",
                "u8",
                "u16",
                "u32",
                "u64",
                "u128",
                "usize",
                "i8",
                "i16",
                "i32",
                "i64",
                "i128",
                "isize",
                "f32",
                "f64",
            ];
            NOT_RESULTS.iter().any(|name| last.ident == name)
        }
        Type::Group(group) => return not_a_result(&group.elem),
        Type::Paren(paren) => return not_a_result(&paren.elem),
        Type::Tuple(_)
        | Type::Reference(_)
        | Type::Array(_)
        | Type::Slice(_)
        | Type::Ptr(_)
        | Type::Never(_)
        | Type::FnPtr(_)
        | Type::TraitObject(_) => true,
        _ => false,
    };
    let written = written(ty);
    visibly_not.then(|| {
        Error::new_spanned(
            ty,
            format!(
                "`#[retry]` needs a function that returns `Result<T, E>`, not `{written}`: only \
                 a failure can be retried; return `Result<T, E>` where `E` implements `Classify`"
            ),
        )
    })
}

/// An `E` that cannot implement `Classify` anywhere but in `retry-runtime` (`String`, `&str`,
/// `Box<dyn Error>`, `anyhow::Error`): the orphan rule forbids the user's impl, so the fix is
/// a type of their own.
fn foreign_error(ty: &Type) -> Option<Error> {
    let error = error_type(ty)?;
    let foreign = match error {
        Type::Reference(reference) => {
            matches!(&*reference.elem, Type::Path(path) if path.path.is_ident("str"))
        }
        Type::TraitObject(_) => true,
        Type::Path(path) if path.qself.is_none() => {
            let segments: Vec<String> = path
                .path
                .segments
                .iter()
                .map(|segment| segment.ident.to_string())
                .collect();
            let last = path.path.segments.last()?;
            match segments
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice()
            {
                [.., "String"] | ["anyhow" | "eyre", ..] => true,
                [.., "Box" | "Arc"] => {
                    // `Box<dyn Error>`: `Classify` for `Box<T>` asks `T`, a trait object.
                    matches!(&last.arguments, PathArguments::AngleBracketed(arguments)
                        if matches!(arguments.args.first(), Some(GenericArgument::Type(Type::TraitObject(_)))))
                }
                _ => false,
            }
        }
        _ => false,
    };
    let written = written(error);
    foreign.then(|| {
        Error::new_spanned(
            error,
            format!(
                "`{written}` cannot say whether a failure is worth retrying, and `Classify` cannot \
                 be implemented for it outside `retry-runtime`; wrap it in an error type of your \
                 own and derive `Classify` on it, like `#[derive(Debug, thiserror::Error, \
                 Classify)] enum FetchError {{ #[error(\"{{0}}\")] #[classify(definitive)] \
                 Other({written}) }}`"
            ),
        )
    })
}

/// A type as the user would write it: `Box<dyn Error + Send>`, not `Box < dyn Error + Send >`.
pub(crate) fn written(ty: &impl ToTokens) -> String {
    let mut text = ty.to_token_stream().to_string();
    for (spaced, tight) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" < ", "<"),
        ("< ", "<"),
        (" >", ">"),
        ("& ", "&"),
        (" ,", ","),
    ] {
        text = text.replace(spaced, tight);
    }
    text
}

/// "`#[retry]` needs an `async fn`", or, where another attribute macro has already made the
/// `async fn` a plain one, which order works.
fn not_async(sig: &Signature, stmts: &TokenStream) -> Error {
    let returns = sig.output.to_token_stream();
    let message = if contains_ident(returns, &|ident| ident == "async_trait") {
        // `#[async_trait]` on the impl has turned the method into a `fn` returning a boxed
        // future, before `#[retry]` could see its body.
        "`#[retry]` cannot see this method's body: `#[async_trait]` has already turned it into \
         a `fn` returning a boxed future; put `#[retry]` on an inherent `async fn` (or a free \
         one) and call that from the trait method"
    } else if contains_ident(stmts.clone(), &|ident| ident == "block_on") {
        // `#[tokio::main]` or `#[tokio::test]` above: its body is a `block_on` call.
        "`#[retry]` sees a plain `fn` here because an attribute above it (like \
         `#[tokio::main]` or `#[tokio::test]`) has already run; write `#[retry]` first, above \
         the other attribute"
    } else {
        "`#[retry]` needs an `async fn`: it retries a call by running its body again; write \
         `async fn`"
    };
    Error::new(sig.fn_token.span, message)
}

/// Whether an identifier in `tokens` (nested groups included) passes `test`.
pub(crate) fn contains_ident(tokens: TokenStream, test: &dyn Fn(&Ident) -> bool) -> bool {
    tokens.into_iter().any(|token| match token {
        TokenTree::Ident(ident) => test(&ident),
        TokenTree::Group(group) => contains_ident(group.stream(), test),
        _ => false,
    })
}

/// An `impl Trait` in a return type: its keyword, and whether a bound is a stream.
struct ImplTrait {
    keyword: Ident,
    /// A bound names `Stream`, `TryStream` or `FusedStream` (`futures::Stream<...>`,
    /// `impl Send + Stream`).
    stream: bool,
}

/// The traits whose `impl` is a stream, by the last segment of their path.
const STREAMS: [&str; 3] = ["Stream", "TryStream", "FusedStream"];

/// The first `impl` keyword in a type, nested groups included, and whether it names a stream.
fn find_impl(tokens: TokenStream) -> Option<ImplTrait> {
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Ident(keyword) if keyword == "impl" => {
                // The bounds, up to the `,` or `>` that ends the type: each bound's last
                // segment before its generics (a `<...>` is punctuation here, so the
                // idents inside it are skipped by tracking its depth).
                let (mut depth, mut last, mut stream) = (0usize, None::<Ident>, false);
                while let Some(token) = tokens.peek() {
                    match token {
                        TokenTree::Punct(punct)
                            if depth == 0 && matches!(punct.as_char(), ',' | '>' | ';' | '=') =>
                        {
                            break;
                        }
                        TokenTree::Punct(punct) if punct.as_char() == '<' => depth += 1,
                        TokenTree::Punct(punct) if punct.as_char() == '>' => depth -= 1,
                        TokenTree::Punct(punct) if depth == 0 && punct.as_char() == '+' => {
                            stream |= last
                                .take()
                                .is_some_and(|name| STREAMS.iter().any(|s| name == s));
                        }
                        TokenTree::Ident(ident) if depth == 0 => last = Some(ident.clone()),
                        TokenTree::Group(_) if depth == 0 => break,
                        _ => {}
                    }
                    tokens.next();
                }
                stream |= last.is_some_and(|name| STREAMS.iter().any(|s| name == s));
                return Some(ImplTrait { keyword, stream });
            }
            TokenTree::Group(group) => {
                if let Some(found) = find_impl(group.stream()) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

fn no_return_type(sig: &Signature) -> Error {
    Error::new(
        sig.paren_token.span.close(),
        "`#[retry]` needs a function that returns `Result<T, E>`; this one returns `()`, so no \
         failure can be retried: add `-> Result<T, E>` where `E` implements `Classify`",
    )
}

/// "`#[retry]` goes on an `async fn`", on the keyword of whatever it was put on.
fn not_a_function(item: TokenStream) -> Error {
    let (span, what) = match syn::parse2::<Item>(item.clone()) {
        Ok(item) => describe(&item),
        Err(_) => (first_span(&item), "this item"),
    };
    Error::new(
        span,
        format!(
            "`#[retry]` goes on an `async fn` that returns a `Result`, not on {what}; put it on \
             the function whose calls should be retried"
        ),
    )
}

/// The item's keyword and what to call it in a message.
fn describe(item: &Item) -> (Span, &'static str) {
    match item {
        Item::Struct(item) => (item.struct_token.span, "a struct"),
        Item::Enum(item) => (item.enum_token.span, "an enum"),
        Item::Union(item) => (item.union_token.span, "a union"),
        Item::Trait(item) => (item.trait_token.span, "a trait"),
        Item::Impl(item) => (item.impl_token.span, "an `impl` block"),
        Item::Mod(item) => (item.mod_token.span, "a module"),
        Item::Const(item) => (item.const_token.span, "a `const`"),
        Item::Static(item) => (item.static_token.span, "a `static`"),
        Item::Type(item) => (item.type_token.span, "a type alias"),
        Item::Use(item) => (item.use_token.span, "a `use` declaration"),
        other => (first_span(other), "this item"),
    }
}

/// The first token of the body that names an argument (`self` taken by value included): a
/// body that moves it cannot run twice, and rustc's error about that points where the
/// attempt's block starts.
pub(crate) fn first_argument_use(function: &RetryFn) -> Option<Span> {
    let names: Vec<String> = function
        .sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(pat) => Some(pat.ident.to_string()),
                _ => None,
            },
            FnArg::Receiver(receiver) if !matches!(receiver.kind, ReceiverKind::Reference(..)) => {
                Some("self".to_owned())
            }
            FnArg::Receiver(_) => None,
        })
        .collect();
    find_ident(function.stmts.clone(), &names)
}

fn find_ident(tokens: TokenStream, names: &[String]) -> Option<Span> {
    tokens.into_iter().find_map(|token| match token {
        TokenTree::Ident(ident) if names.iter().any(|name| ident == name) => Some(ident.span()),
        TokenTree::Group(group) => find_ident(group.stream(), names),
        _ => None,
    })
}

/// The `E` of a return type written `Result<T, E>` (any path ending in `Result` with two type
/// arguments), so a missing `Classify` can be reported on it. An alias such as
/// `io::Result<T>` names no `E`; the check then points at the whole return type.
pub(crate) fn error_type(output: &Type) -> Option<&Type> {
    let path = match output {
        Type::Path(path) if path.qself.is_none() => &path.path,
        Type::Group(group) => return error_type(&group.elem),
        Type::Paren(paren) => return error_type(&paren.elem),
        _ => return None,
    };
    let last = path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return None;
    };
    let types: Vec<&Type> = arguments
        .args
        .iter()
        .filter_map(|argument| match argument {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .collect();
    match types.as_slice() {
        [_, error] => Some(error),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_a_stream(ty: &str) -> Option<bool> {
        let ty: Type = syn::parse_str(ty).expect("a type");
        find_impl(ty.to_token_stream()).map(|found| found.stream)
    }

    #[test]
    fn an_impl_of_a_stream_trait_is_a_stream_whatever_its_path_and_other_bounds() {
        for ty in [
            "Result<impl Stream<Item = u32>, E>",
            "Result<impl futures::Stream<Item = Result<Event, E>>, E>",
            "Result<impl Send + TryStream, E>",
            "Result<impl 'static + Stream + Unpin, E>",
            "Result<impl FusedStream<Item = u8> + Send, E>",
        ] {
            assert_eq!(names_a_stream(ty), Some(true), "{ty}");
        }
    }

    #[test]
    fn an_impl_of_another_trait_is_not_a_stream() {
        for ty in [
            "Result<impl UpStream, E>",
            "Result<impl Display, E>",
            "Result<impl Fn(u32) -> Stream, E>",
            "Result<impl Iterator<Item = Stream>, E>",
        ] {
            assert_eq!(names_a_stream(ty), Some(false), "{ty}");
        }
        assert_eq!(names_a_stream("Result<Pin<Box<dyn Stream>>, E>"), None);
    }
}
