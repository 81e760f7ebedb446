//! The expansion: the signature as written, and a body that builds the call's `Retry` in
//! `static`/`const` items and runs the original body once per attempt on the engine.
//!
//! Every path is absolute through `<crate>::__private`, so user items named `Result`, `core`
//! or `std` cannot capture it; locals are `Span::mixed_site()`, so the body cannot see them.

use proc_macro2::{Group, Literal, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::Ident;
use syn::ext::IdentExt;

use super::args::{At, BudgetChoice, Config, PolicyChoice};
use super::function::{self, RetryFn};
use super::span::first_span;
use crate::names;

mod placement;

use placement::{Steps, across_steps, path_names_the_functions_context, upstream_steps};

/// The function, its body replaced by the retry loop over the original body.
pub(super) fn generate(config: &Config, function: RetryFn) -> TokenStream {
    let krate = &config.krate;
    let private = quote!(#krate::__private);
    let (setup, source) = if names_the_functions_context(config, &function) {
        local_retry(config, &private, &function.sig.ident)
    } else {
        let policy = policy_consts(config, &private);
        let retry = retry_static(config, &private, &function.sig.ident);
        let checks = const_checks(config, &private, &policy_ident()).map(|checks| {
            quote! {
                const _: () = { #checks };
            }
        });
        (quote!(#policy #retry #checks), quote!(&__RETRY))
    };
    let attempts = attempt_loop(config, &function, &private, &source);
    let RetryFn {
        attrs,
        vis,
        sig,
        brace,
        ..
    } = function;
    let mut tokens = quote!(#(#attrs)* #vis #sig);
    brace.surround(&mut tokens, |body| {
        body.extend([setup, attempts]);
    });
    tokens
}

/// The name of the adjusted policy in the `const` items.
fn policy_ident() -> Ident {
    Ident::new("__RETRY_POLICY", Span::call_site())
}

/// Whether the policy's path names what only the function's body can: `Self` (an associated
/// const of the `impl`), generic arguments, or one of the function's type parameters. Items
/// in the body (`const`, `static`) cannot name them (E0401), so the policy is then built in
/// an inline `const` block, which can.
fn names_the_functions_context(config: &Config, function: &RetryFn) -> bool {
    let PolicyChoice::Path(path) = &config.policy else {
        return false;
    };
    path_names_the_functions_context(path, function)
}

/// The call's `Retry` as a local the `Run` owns, its policy built and checked in an inline
/// `const` block, for a policy that names the function's context (`Self::POLICY`). It is
/// built per call (a few words; the policy is a `'static` constant); the checks are as compile-time as the
/// `static` expansion's, but run when the function is instantiated (for a generic `impl`,
/// once per type it is used with).
fn local_retry(
    config: &Config,
    private: &TokenStream,
    ident: &Ident,
) -> (TokenStream, TokenStream) {
    let PolicyChoice::Path(path) = &config.policy else {
        unreachable!("only a user's path names the function's context")
    };
    let policy = Ident::new("__retry_policy", Span::mixed_site());
    let retry = Ident::new("__retry_retry", Span::mixed_site());
    let adjustments = adjustments(config, private);
    let checks = const_checks(config, private, &policy);
    let build = retry_builder(config, private, ident, &quote!(#policy));
    // The `&` of the block's value is the const's own final value, so it lives for
    // `'static`, as `Retry::new` asks.
    let setup = quote! {
        let #retry = {
            let #policy: &'static #private::Policy = const {
                &{
                    let #policy: #private::Policy = #path #(#adjustments)*;
                    #checks
                    #policy
                }
            };
            #build
        };
    };
    (setup, quote!(#retry))
}

/// `__RETRY_BASE`, the policy named (on the user's path, so a path that is not a `Policy`
/// is reported there, once), and `__RETRY_POLICY`, with the attribute's adjustments.
fn policy_consts(config: &Config, private: &TokenStream) -> TokenStream {
    let base = match &config.policy {
        PolicyChoice::Default => quote!(#private::Policy::AVAILABILITY),
        PolicyChoice::BuiltIn(At { value, span }) => {
            let konst = Ident::new(value, *span);
            quote!(#private::Policy::#konst)
        }
        PolicyChoice::Path(path) => path.to_token_stream(),
    };
    let adjustments = adjustments(config, private);
    let policy = policy_ident();
    quote! {
        const __RETRY_BASE: #private::Policy = #base;
        const #policy: #private::Policy = __RETRY_BASE #(#adjustments)*;
    }
}

/// The `const fn` builder calls for each key that adjusts the policy.
fn adjustments(config: &Config, private: &TokenStream) -> Vec<TokenStream> {
    let millis = |at: &At<u64>| {
        let n = spanned(Literal::u64_unsuffixed(at.value), at.span);
        quote!(#private::core::time::Duration::from_millis(#n))
    };
    let mut calls = Vec::new();
    if let Some(at) = &config.attempts {
        let n = spanned(Literal::u32_unsuffixed(at.value), at.span);
        calls.push(quote!(.with_attempts(#n)));
    }
    if let Some(at) = &config.base_ms {
        let base = millis(at);
        calls.push(quote!(.with_base(#base)));
    }
    if let Some(at) = &config.cap_ms {
        let cap = millis(at);
        calls.push(quote!(.with_cap(#cap)));
    }
    if let Some(at) = &config.multiplier {
        let m = spanned(Literal::f64_unsuffixed(at.value), at.span);
        calls.push(quote!(.with_multiplier(#m)));
    }
    if let Some(At { value, span }) = &config.jitter {
        let variant = Ident::new(value, *span);
        calls.push(quote!(.with_jitter(#private::Jitter::#variant)));
    }
    for class in &config.also_retry {
        let class = class_value(class, private);
        calls.push(quote!(.retrying(#class)));
    }
    for class in &config.never_retry {
        let class = class_value(class, private);
        calls.push(quote!(.not_retrying(#class)));
    }
    calls
}

fn class_value(class: &At<&'static str>, private: &TokenStream) -> TokenStream {
    let variant = Ident::new(class.value, class.span);
    if names::class_by_variant(class.value).is_some_and(|class| class.takes_hint) {
        quote!(#private::Class::#variant { retry_after: #private::core::option::Option::None })
    } else {
        quote!(#private::Class::#variant)
    }
}

fn spanned(mut literal: Literal, span: Span) -> Literal {
    literal.set_span(span);
    literal
}

/// `__RETRY`: the call's `Retry`, a `static` because a quota is a `static` it points to, which
/// a `const` may not.
fn retry_static(config: &Config, private: &TokenStream, ident: &Ident) -> TokenStream {
    // With a timeout, the `Retry` becomes a `TimedRetry`, the type that times its attempts.
    let ty = match &config.timeout {
        Some(_) => quote!(TimedRetry),
        None => quote!(Retry),
    };
    let build = retry_builder(config, private, ident, &quote!(&__RETRY_POLICY));
    quote! {
        static __RETRY: #private::#ty = #build;
    }
}

/// `Retry::new(policy)` and the builder calls for the name, budget, quota and timeout.
fn retry_builder(
    config: &Config,
    private: &TokenStream,
    ident: &Ident,
    policy: &TokenStream,
) -> TokenStream {
    let name = match &config.name {
        Some(name) => name.to_token_stream(),
        None => {
            let ident = ident.unraw().to_string();
            quote!(#private::core::concat!(#private::core::module_path!(), "::", #ident))
        }
    };
    let budget = config.budget.as_ref().map(|at| {
        let budget = budget_value(&at.value, private);
        quote!(.within(#budget))
    });
    // The quota is borrowed in a `static` of its own: a `static` may point to another, but a
    // `const` quota (a new value at each use, so never shared) is then rustc's E0492 at the
    // user's path, whose help says to make it a `static`. A borrow in the builder call would
    // be E0716, which says nothing of the kind.
    let quota = config.quota.as_ref().map(|quota| {
        let span = first_span(quota);
        let at_quota = respan(private, span);
        let borrow = quote_spanned!(span=> &#quota);
        quote! {
            .with_quota({
                static __RETRY_QUOTA: &'static #at_quota::Quota = #borrow;
                __RETRY_QUOTA
            })
        }
    });
    let timeout = config.timeout.as_ref().map(
        |At { value, .. }| quote!(.timeout(#private::core::time::Duration::from_millis(#value))),
    );
    quote!(#private::Retry::new(#policy).named(#name) #budget #quota #timeout)
}

fn budget_value(budget: &BudgetChoice, private: &TokenStream) -> TokenStream {
    match budget {
        BudgetChoice::Turn => quote!(#private::Deadline::Turn),
        BudgetChoice::Within { millis, .. } => {
            quote!(#private::Deadline::Within(#private::core::time::Duration::from_millis(#millis)))
        }
    }
}

/// What can only be known once the policy is a value: that it makes sense (a user's policy,
/// or a built-in whose base the attribute's `cap_ms` undercuts), and that its worst case fits
/// a literal budget. A failed check panics in `const` evaluation, which is a compile error at
/// the key to change.
fn const_checks(config: &Config, private: &TokenStream, policy: &Ident) -> Option<TokenStream> {
    let adjusted = !matches!(
        config.policy,
        PolicyChoice::Default | PolicyChoice::BuiltIn(_)
    ) || config.attempts.is_some()
        || config.base_ms.is_some()
        || config.cap_ms.is_some()
        || config.multiplier.is_some();
    let policy_check = adjusted.then(|| {
        let blame = policy_blame(config);
        let private = respan(private, blame);
        quote_spanned! {blame=>
            if let #private::core::option::Option::Some(problem) =
                #private::policy_problem(&#policy)
            {
                #private::core::panic!("{}", problem.as_str());
            }
        }
    });
    let budget_check = match &config.budget {
        Some(At {
            value: value @ BudgetChoice::Within { text, .. },
            span,
        }) => {
            let private = respan(private, *span);
            let BudgetChoice::Within { millis, .. } = value else {
                unreachable!("matched above")
            };
            Some(quote_spanned! {*span=>
                if let #private::core::option::Option::Some(problem) = #private::budget_problem(
                    &#policy,
                    #private::core::time::Duration::from_millis(#millis),
                    #text,
                ) {
                    #private::core::panic!("{}", problem.as_str());
                }
            })
        }
        _ => None,
    };
    if policy_check.is_none() && budget_check.is_none() {
        return None;
    }
    Some(quote! {
        #policy_check
        #budget_check
    })
}

/// The loop: each attempt runs the body as an `async` block pinned to the declared return
/// type (so `?` and `return` mean what they meant), and the engine decides on its output.
///
/// The loop and the attempt's block carry the body's span, so a body that moves an argument
/// (which a second attempt could not do) is reported in the body, not on the attribute.
///
/// The contract is checked where the user wrote it, once each: the output is a `Result` (on
/// the return type), its error implements `Classify` and `Display` (on the `E` of
/// `Result<T, E>`, or on the return type when an alias hides it). Each check is a closure
/// the engine calls, so no bound of ours is involved and no message names the runtime.
///
/// With a `timeout`, each attempt runs under its timer ([`start_and_take`]).
fn attempt_loop(
    config: &Config,
    function: &RetryFn,
    private: &TokenStream,
    source: &TokenStream,
) -> TokenStream {
    let run = Ident::new("__retry_run", Span::mixed_site());
    let output = Ident::new("__retry_output", Span::mixed_site());
    let pinned = Ident::new("__retry_pinned", Span::mixed_site());
    let attempted = Ident::new("__retry_attempted", Span::mixed_site());
    let wait = Ident::new("__retry_wait", Span::mixed_site());
    let stmts = &function.stmts;
    let ret = &function.output;
    let body_span = function.brace.span.join();
    // Where an argument is first used in the body: a second attempt that cannot use it again
    // is reported there.
    let attempt_span = function::first_argument_use(function)
        .map_or(body_span, |span| Span::mixed_site().located_at(span));
    let ret_span = first_span(ret);
    let error_span = function::error_type(ret).map_or(ret_span, first_span);
    // Only the closure's own body sees these, so they may take the user's span whole.
    let error = Ident::new("__retry_error", error_span);
    let class = Ident::new("__retry_class", Span::mixed_site());
    let formatter = Ident::new("__retry_formatter", error_span);
    let at_ret = respan(private, ret_span);
    let at_error = respan(private, error_span);
    // The one place a return type that is not a `Result` is reported: a failed pattern makes
    // the error's type unknown, which silences every later use of it.
    let err_pattern = quote_spanned!(ret_span=> #at_ret::core::result::Result::Err(#error));
    // Closures, not `<E as Classify>::classify`: a closure is `Fn` whatever its body says,
    // so a missing bound is reported inside it, once, and not again where the engine takes it.
    let classify = quote_spanned!(error_span=> |#error| #at_error::Classify::classify(#error));
    let display = quote_spanned!(error_span=>
        |#error, #formatter| #at_error::Reportable::report(#error, #formatter)
    );
    let (start, take) = start_and_take(config, private, &run, &attempted);
    let steps = if config.across.is_some() {
        across_steps(config, function, private, source, &run, &error)
    } else {
        upstream_steps(config, function, private, source, &run, &error)
    };
    let Steps {
        call,
        setup,
        admit,
        on_failure,
        succeeded: report_success,
        waited,
    } = steps;
    let attempt_block = quote_spanned! {attempt_span=>
        async {
            if let #private::core::option::Option::Some(#pinned) =
                #private::core::option::Option::None::<#ret>
            {
                #[allow(unreachable_code)]
                return #pinned;
            }
            #stmts
        }
    };
    // Polled with its upstream as `Upstream::current`, where it has one: what its answer says
    // of the key (`check_status` reads the headers) reaches the upstream's pacer.
    let polled = Ident::new("__retry_polled", Span::mixed_site());
    // The attempt's output lives in a block of its own, so that nothing of it stays beside
    // the wait across the `.await`: the future holds the larger of the two, not both.
    let retry_loop = quote_spanned! {body_span=>
        loop {
            // The failure, and its class where the route gave it one already.
            let (#error, #class) = {
                #admit
                let #polled = #private::Place::polled(&#run, #attempt_block);
                let #attempted = #run.#start(#polled).await;
                let #output: #ret = #take;
                match #output {
                    #err_pattern => #on_failure,
                    #output => {
                        #report_success
                        #run.succeeded();
                        return #output;
                    }
                }
            };
            // The closures are the checks: `E::classify` alone would not be one. The wait (or
            // the give-up) is held in place, all that lives across the `.await` besides the
            // run: a retry allocates nothing.
            #[allow(clippy::redundant_closure)]
            let #wait = #private::failed(&mut #run, #error, #class, #classify, #display).await;
            if let #private::core::result::Result::Err(#error) = #wait {
                return #private::core::result::Result::Err(#error);
            }
            #waited
        }
    };
    quote! {
        #setup
        let mut #run = #call;
        #retry_loop
    }
}

/// The `Run` method that starts an attempt, and the attempt's output as the body's return
/// type: with a `timeout`, `attempt_timed`, and an attempt that ran out becomes
/// `Err(From::from(timed_out))`, the conversion placed on the key, so an error type that cannot
/// hold a `TimedOut` is reported there.
fn start_and_take(
    config: &Config,
    private: &TokenStream,
    run: &Ident,
    attempted: &Ident,
) -> (TokenStream, TokenStream) {
    let value = Ident::new("__retry_value", Span::mixed_site());
    match &config.timeout {
        Some(At { span, .. }) => {
            let at_key = respan(private, *span);
            let timed_out = Ident::new("__retry_timed_out", Span::mixed_site());
            let convert = quote_spanned!(*span=> #at_key::HoldsTimedOut::hold(#timed_out));
            (
                quote!(attempt_timed),
                quote! {
                    match #run.attempted(#attempted) {
                        #private::core::result::Result::Ok(#value) => #value,
                        #private::core::result::Result::Err(#timed_out) => {
                            #private::core::result::Result::Err(#convert)
                        }
                    }
                },
            )
        }
        None => (quote!(attempt), quote!(#run.attempted(#attempted))),
    }
}

/// `tokens` with every span set to `span`, so that a path built from them and the user's
/// tokens reports at the user's tokens (a span mixing the macro's call site and the user's
/// tokens is reported at the whole attribute). Paths here are absolute, so hygiene is moot.
fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) => {
                let mut respanned = Group::new(group.delimiter(), respan(&group.stream(), span));
                respanned.set_span(span);
                TokenTree::Group(respanned)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// The span to blame when the policy the attribute built is inconsistent at compile time
/// (a cap below the policy's own base, say): the adjustment most likely at fault.
fn policy_blame(config: &Config) -> Span {
    let adjusted = [
        config.cap_ms.as_ref().map(|c| c.span),
        config.base_ms.as_ref().map(|b| b.span),
        config.multiplier.as_ref().map(|m| m.span),
        config.attempts.as_ref().map(|a| a.span),
    ];
    let policy = match &config.policy {
        PolicyChoice::Path(path) => path.path.segments.first().map(|s| s.ident.span()),
        PolicyChoice::BuiltIn(built_in) => Some(built_in.span),
        PolicyChoice::Default => None,
    };
    adjusted
        .into_iter()
        .flatten()
        .next()
        .or(policy)
        .unwrap_or_else(Span::call_site)
}
