//! Where a message points: the span of the first token of what the user wrote.

use proc_macro2::Span;
use quote::ToTokens;

/// The span of the first token of `tokens`; the call site if there are none (an attribute
/// written without arguments has nothing else to point at).
pub(crate) fn first_span(tokens: &impl ToTokens) -> Span {
    tokens
        .to_token_stream()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |token| token.span())
}
