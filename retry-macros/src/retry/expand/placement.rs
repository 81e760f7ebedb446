//! Where each attempt of `#[retry]` goes: on one `upstream` (admitted by it first, and it told
//! how the attempt ended) or `across` an ordered set (routed, moved at once, or left to the
//! ladder). The steps the loop takes around each attempt, beside the engine's.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;

use super::super::args::Config;
use super::super::function::RetryFn;
use super::super::span::first_span;
use super::respan;

/// Whether `path` names what only the function's body can: `Self`, generic arguments, or one
/// of the function's type parameters.
pub(super) fn path_names_the_functions_context(path: &syn::ExprPath, function: &RetryFn) -> bool {
    if path.qself.is_some() {
        return true;
    }
    let params: Vec<&Ident> = function
        .sig
        .generics
        .type_params()
        .map(|param| &param.ident)
        .collect();
    let first = path.path.segments.first().map(|segment| &segment.ident);
    first.is_some_and(|ident| ident == "Self" || params.contains(&ident))
        || path
            .path
            .segments
            .iter()
            .any(|segment| !segment.arguments.is_none())
}

/// With an `upstream`, the steps around each attempt: admitted by the upstream first (the
/// call's error, made from the `UpstreamPaused` where the upstream held it back past its end,
/// returned at once), and the upstream told how the attempt ended. Empty without one.
pub(super) fn upstream_steps(
    config: &Config,
    function: &RetryFn,
    private: &TokenStream,
    source: &TokenStream,
    run: &Ident,
    error: &Ident,
) -> Steps {
    let Some(upstream) = &config.upstream else {
        return Steps {
            call: quote!(#private::Call::new(#source)),
            setup: TokenStream::new(),
            admit: TokenStream::new(),
            on_failure: quote!((#error, #private::core::option::Option::None)),
            succeeded: TokenStream::new(),
            waited: TokenStream::new(),
        };
    };
    let span = first_span(upstream);
    let at_upstream = respan(private, span);
    // The call keeps its admission beside its run, so that one drop frees a probe the call
    // was admitted as. Its upstream is named by a type (typed where the user wrote the path),
    // so that the call's future keeps no pointer to it; unless the path names what only the
    // function's body can (`Self::MODEL`, `T::MODEL`), which an item cannot: then a pointer.
    let (setup, call) = if path_names_the_functions_context(upstream, function) {
        let kept = kept_by_pointer(
            &at_upstream,
            upstream,
            &quote!(Upstream),
            &quote!(Admitted::idle),
        );
        (
            TokenStream::new(),
            quote!(#private::Call::with(#source, #kept)),
        )
    } else {
        let named = Ident::new("__RetryUpstream", Span::mixed_site());
        let setup = quote_spanned! {span=>
            struct #named;
            impl #at_upstream::Named<#at_upstream::Upstream> for #named {
                const IT: &'static #at_upstream::Upstream = &#upstream;
            }
        };
        let call = quote!(#private::Call::with(#source, #private::AdmittedOn::<#named>::idle()));
        (setup, call)
    };
    // A quiet upstream admits at once, with no future made for a wait (a retry takes a token
    // of a fleet's retry budget there, if one holds the upstream).
    // What each attempt costs of the key's tokens, typed at the user's expression; read only
    // where the upstream has something to say (its pacer among it).
    let tokens = match &config.tokens {
        Some(tokens) => {
            let at = first_span(tokens);
            let named = Ident::new("__retry_tokens", Span::mixed_site());
            quote_spanned!(at=> { let #named: u32 = #tokens; #named })
        }
        None => quote!(0),
    };
    placed_steps(
        private,
        &at_upstream,
        span,
        run,
        error,
        (setup, call),
        &tokens,
    )
}

/// `#at::#make(&path)` for a path kept by pointer, typed by a `let` at the path (`&'static
/// #at::#ty`), so that a path to something else is reported there alone, with no note
/// pointing into the runtime's signature.
fn kept_by_pointer(
    at: &TokenStream,
    path: &syn::ExprPath,
    ty: &TokenStream,
    make: &TokenStream,
) -> TokenStream {
    let span = first_span(path);
    let (ty, make) = (respan(ty, span), respan(make, span));
    let pointer = Ident::new("__retry_pointer", Span::mixed_site());
    quote_spanned! {span=>
        #at::#make({
            let #pointer: &'static #at::#ty = &#path;
            #pointer
        })
    }
}

/// What the loop does around each attempt beside the engine's steps: before the loop, before
/// the attempt, with its failure (the error for the ladder, or a `continue` or `return`), after
/// a success and after a wait.
pub(super) struct Steps {
    pub(super) call: TokenStream,
    pub(super) setup: TokenStream,
    pub(super) admit: TokenStream,
    pub(super) on_failure: TokenStream,
    pub(super) succeeded: TokenStream,
    pub(super) waited: TokenStream,
}

/// With `across`, the steps of a call across an ordered set of upstreams: each attempt routed
/// to the first upstream neither paused nor gated (the call's error, made from the
/// `UpstreamPaused` where every one held it back past its end, returned at once); a failure
/// told to its upstream, then moved at once to the next, or left to the ladder; a wait starts
/// a new round from the first upstream.
pub(super) fn across_steps(
    config: &Config,
    function: &RetryFn,
    private: &TokenStream,
    source: &TokenStream,
    run: &Ident,
    error: &Ident,
) -> Steps {
    let Some(across) = &config.across else {
        unreachable!("across_steps is called with `across` set");
    };
    let span = first_span(across);
    let at_across = respan(private, span);
    // The call keeps its route and its attempt's admission beside its run, so that one drop
    // frees a probe the call was admitted as. Its set is named by a type, so that the call's
    // future keeps no pointer to it; unless the path names what only the function's body can
    // (`Self::MODELS`, `T::MODELS`), which an item cannot: then a pointer, typed where the
    // user wrote the path, as the constant is.
    let (setup, call) = if path_names_the_functions_context(across, function) {
        let kept = kept_by_pointer(&at_across, across, &quote!(Upstreams), &quote!(Routed::at));
        (
            TokenStream::new(),
            quote!(#private::Call::with(#source, #kept)),
        )
    } else {
        // A constant, typed where the user wrote it, so a path to something else is reported
        // there, once.
        let set = Ident::new("__RETRY_ACROSS", Span::mixed_site());
        let named = Ident::new("__RetryAcross", Span::mixed_site());
        let setup = quote_spanned! {span=>
            const #set: &#at_across::Upstreams = &#across;
            struct #named;
            impl #private::Named<#private::Upstreams> for #named {
                const IT: &'static #private::Upstreams = #set;
            }
        };
        let call = quote!(#private::Call::with(
            #source,
            #private::Routed::<#private::core::marker::PhantomData<#named>>::named()
        ));
        (setup, call)
    };
    placed_steps(
        private,
        &at_across,
        span,
        run,
        error,
        (setup, call),
        &quote!(0),
    )
}

/// The steps around each attempt on an upstream or across a set, the same few calls on what
/// the call keeps ([`Place`]): admitted at once (`ready`), or after a wait (`hold`), the
/// call's error made from the `UpstreamPaused` where the wait would outlast it, returned at
/// once; a failure classified once and told (`failed`), then a move at once (`continue`), the
/// ladder's turn, or the end; `succeeded`; and `waited` after the ladder's wait.
///
/// [`Place`]: https://docs.rs/retry-runtime
fn placed_steps(
    private: &TokenStream,
    at_key: &TokenStream,
    span: Span,
    run: &Ident,
    error: &Ident,
    (setup, call): (TokenStream, TokenStream),
    tokens: &TokenStream,
) -> Steps {
    let hold = Ident::new("__retry_hold", Span::mixed_site());
    let admit = quote_spanned! {span=>
        if !#private::Place::ready(&mut #run) {
            let #hold = #at_key::HoldsUpstreamPaused::hold;
            if let #private::core::result::Result::Err(#error) =
                #private::Place::hold(&mut #run, #hold, #tokens).await
            {
                return #private::core::result::Result::Err(#error.into_error());
            }
        }
    };
    let formatter = Ident::new("__retry_formatter", Span::mixed_site());
    let classify = quote!(|#error| #private::Classify::classify(#error));
    let display = quote!(|#error, #formatter| #private::Reportable::report(#error, #formatter));
    // The error's `Classify` and `Display` are checked at the user's `E` by the ladder's
    // closures; these are the same, for the placement, which classifies the failure once.
    let on_failure = quote! {{
        #[allow(clippy::redundant_closure)]
        let #error = match #private::placed_failed(&mut #run, #error, #classify, #display) {
            #private::core::result::Result::Ok(#private::core::option::Option::None) => continue,
            #private::core::result::Result::Ok(#private::core::option::Option::Some(#error)) => (#error.0, #private::core::option::Option::Some(#error.1)),
            #private::core::result::Result::Err(#error) => {
                return #private::core::result::Result::Err(#error);
            }
        };
        #error
    }};
    Steps {
        call,
        setup,
        admit,
        on_failure,
        succeeded: quote!(#private::Place::succeeded(&mut #run);),
        waited: quote!(#private::Place::waited(&mut #run);),
    }
}
