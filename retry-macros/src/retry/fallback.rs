//! When the attribute is wrong, the function is still emitted as written, beside the errors:
//! the rest of the crate keeps type-checking and an editor keeps completing, and no cascade of
//! "cannot find function" follows the one real mistake.

use proc_macro2::TokenStream;

/// The item unchanged, followed by `compile_error!` for each error.
pub(crate) fn item_with_errors(item: TokenStream, error: syn::Error) -> TokenStream {
    let mut tokens = item;
    tokens.extend(error.into_compile_error());
    tokens
}
