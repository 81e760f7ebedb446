//! `#[derive(Classify)]`, built as thiserror-impl is: [`attr`] reads each `#[classify(...)]`,
//! [`ast`] gathers them by where they stand, [`valid`] applies the rules into a plan, and
//! [`expand`] writes the impl. On any mistake the derive emits the errors and a stand-in impl,
//! so the type still implements `Classify` and nothing else fails because of it.

mod ast;
mod attr;
mod expand;
mod valid;

use proc_macro2::{Span, TokenStream};
use syn::{DeriveInput, Error};

use crate::errors::Errors;

/// The derive's output for `input`: the impl, or the errors and a stand-in impl.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input = match syn::parse2::<DeriveInput>(input) {
        Ok(input) => input,
        Err(error) => return error.into_compile_error(),
    };
    let mut errors = Errors::default();
    let parsed = ast::Input::from_syn(&input, &mut errors);
    let krate = valid::krate(&parsed);
    let plan = valid::plan(&parsed, &mut errors);
    match (plan, errors.finish()) {
        (Some(plan), Ok(())) => expand::impl_classify(&input, &krate, &plan),
        (_, Err(error)) => expand::fallback(&input, &krate, error),
        (None, Ok(())) => expand::fallback(
            &input,
            &krate,
            Error::new(
                Span::call_site(),
                "`#[derive(Classify)]` found nothing to classify",
            ),
        ),
    }
}
