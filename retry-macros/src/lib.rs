//! The `#[retry]` attribute of `retry-runtime`. Depend on `retry-runtime` and use
//! `retry_runtime::retry`; this crate's paths are not public API.

use proc_macro::TokenStream;

/// Rewrites an `async fn` onto `retry-runtime`'s backoff engine. See `retry_runtime::retry`.
#[proc_macro_attribute]
pub fn retry(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
