//! `#[retry]`: [`args`] reads the attribute's keys (each named once in [`key`], durations in
//! [`duration`]), [`function`] reads the annotated `async fn`, and [`expand`] writes it onto the
//! runtime's engine. On any mistake the attribute emits the errors and the item as written
//! ([`fallback`]), so the rest of the crate keeps type-checking; [`span`] says where an error
//! points.

mod args;
mod duration;
mod expand;
mod fallback;
mod function;
mod key;
mod span;

use proc_macro2::TokenStream;
use quote::quote;

use span::first_span;

/// `#[retry(args)] item`, expanded; or the item as written and every error found.
pub(crate) fn attribute(args: TokenStream, item: TokenStream) -> TokenStream {
    if function::rustc_reports(&item) {
        return item;
    }
    if let Ok(closure) = syn::parse2::<syn::ExprClosure>(item.clone()) {
        return on_a_closure(&closure);
    }
    let config = args::parse(args);
    let function = function::parse(item.clone());
    match (config, function) {
        (Ok(config), Ok(function)) => expand::generate(&config, function),
        (Err(error), Ok(_)) | (Ok(_), Err(error)) => fallback::item_with_errors(item, error),
        (Err(mut error), Err(more)) => {
            error.combine(more);
            fallback::item_with_errors(item, error)
        }
    }
}

/// `#[retry]` on a closure: one message of ours, at the closure, and the closure kept as the
/// expression's value, so nothing else cascades from it. (rustc also reports that attributes
/// on expressions are unstable; a macro cannot silence that.)
fn on_a_closure(closure: &syn::ExprClosure) -> TokenStream {
    let error = syn::Error::new(
        first_span(closure),
        "`#[retry]` goes on an `async fn`, not a closure; for a closure, call \
         `Retry::new(&POLICY).run(async |attempt| ...)`",
    )
    .to_compile_error();
    quote!({ #error; #closure })
}
