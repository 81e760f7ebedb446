//! The impl: one `match` arm per case, every path absolute through `<crate>::__private`, so
//! user items named `Result`, `Class`, `Duration`, `core` or `std` cannot capture it, and it
//! compiles under `#![no_implicit_prelude]`.
//!
//! A delegated field is classified by `<FieldType as Classify>::classify`, and a hint read by
//! `<FieldType as RetryAfter>::retry_after`, each spanned at the field's type: a field that
//! cannot do it is reported there, by the trait's own message.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{DeriveInput, Generics, Ident, Path, Type, WherePredicate};

use super::ast::Field;
use super::valid::{Body, Decision, Plan};

/// `impl Classify for Type`, as the plan says.
pub(crate) fn impl_classify(input: &DeriveInput, krate: &Path, plan: &Plan<'_>) -> TokenStream {
    let private = quote!(#krate::__private);
    let body = match &plan.body {
        Body::With(path) => with_call(path, &private),
        Body::Struct(decision) => {
            let (pattern, class) = arm(&quote!(Self), decision, &private);
            quote!(match self { #pattern => #class })
        }
        Body::Enum(cases) if cases.is_empty() => quote!(match *self {}),
        Body::Enum(cases) => {
            let arms = cases.iter().map(|(ident, decision)| {
                let (pattern, class) = arm(&quote!(Self::#ident), decision, &private);
                quote!(#pattern => #class,)
            });
            quote!(match self { #(#arms)* })
        }
    };
    let generics = with_inferred_bounds(&input.generics, plan, &private);
    let reached = reached_fn(krate, plan).unwrap_or_default();
    impl_block(input, &generics, &private, &body, &reached)
}

/// `fn reached`, for a type with a `#[classify(from)]` field: the field says how far its
/// attempt got (a body cut off after a response's head), as it says its class.
fn reached_fn(krate: &Path, plan: &Plan<'_>) -> Option<TokenStream> {
    let private = quote!(#krate::__private);
    let nothing = quote!(#krate::notice::Reached::Nothing);
    let binding = Ident::new("__classify_field", Span::mixed_site());
    let forward = |path: &TokenStream, field: &Field<'_>| {
        let (member, ty) = (&field.member, field.ty);
        let reached = quote_spanned! {ty.span()=>
            <#ty as #private::Classify>::reached(#binding)
        };
        quote!(#path { #member: #binding, .. } => #reached,)
    };
    let arms: Vec<TokenStream> = match &plan.body {
        Body::Struct(Decision::From(field)) => vec![forward(&quote!(Self), field)],
        Body::Enum(cases) if cases.iter().any(|(_, d)| matches!(d, Decision::From(_))) => cases
            .iter()
            .map(|(ident, decision)| match decision {
                Decision::From(field) => forward(&quote!(Self::#ident), field),
                _ => quote!(Self::#ident { .. } => #nothing,),
            })
            .collect(),
        _ => return None,
    };
    Some(quote! {
        fn reached(&self) -> #krate::notice::Reached {
            match self { #(#arms)* }
        }
    })
}

/// The impl that stands in when the derive reports errors: it keeps every use of the type as
/// `Classify` compiling, so the errors are the only ones shown.
pub(crate) fn fallback(input: &DeriveInput, krate: &Path, error: syn::Error) -> TokenStream {
    let private = quote!(#krate::__private);
    let mut tokens = error.into_compile_error();
    tokens.extend(impl_block(
        input,
        &input.generics,
        &private,
        &quote!(::core::unreachable!()),
        &TokenStream::new(),
    ));
    tokens
}

fn impl_block(
    input: &DeriveInput,
    generics: &Generics,
    private: &TokenStream,
    body: &TokenStream,
    methods: &TokenStream,
) -> TokenStream {
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    quote! {
        #[automatically_derived]
        #[allow(unused_qualifications)]
        impl #impl_generics #private::Classify for #ident #ty_generics #where_clause {
            fn classify(&self) -> #private::Class {
                #body
            }
            #methods
        }
    }
}

/// The pattern that matches the case, binding the field the decision reads, and the class.
fn arm(
    path: &TokenStream,
    decision: &Decision<'_>,
    private: &TokenStream,
) -> (TokenStream, TokenStream) {
    let binding = Ident::new("__classify_field", Span::mixed_site());
    let binds = |field: &Field<'_>| {
        let member = &field.member;
        quote!(#path { #member: #binding, .. })
    };
    match decision {
        Decision::Class { word, hint } => {
            let variant = Ident::new(word.variant, word.span);
            let class = quote!(#private::Class::#variant);
            match (word.takes_hint, hint) {
                (false, _) => (quote!(#path { .. }), class),
                (true, None) => (
                    quote!(#path { .. }),
                    quote!(#class { retry_after: #private::core::option::Option::None }),
                ),
                (true, Some(field)) => {
                    let ty = field.ty;
                    let hint = quote_spanned! {ty.span()=>
                        <#ty as #private::RetryAfter>::retry_after(#binding)
                    };
                    (binds(field), quote!(#class { retry_after: #hint }))
                }
            }
        }
        Decision::From(field) => {
            let ty = field.ty;
            let class = quote_spanned! {ty.span()=>
                <#ty as #private::Classify>::classify(#binding)
            };
            (binds(field), class)
        }
        Decision::With(with) => (quote!(#path { .. }), with_call(with, private)),
    }
}

/// `path(self)`, through a `fn(&Self) -> Class` pointer spanned at the path, so a function of
/// another shape is one error there.
fn with_call(path: &Path, private: &TokenStream) -> TokenStream {
    let function = Ident::new("__classify_with", Span::mixed_site());
    let pointer = quote_spanned!(path.span()=> fn(&Self) -> #private::Class = #path);
    quote! {{
        let #function: #pointer;
        #function(self)
    }}
}

/// The type's generics, with `Field: Classify` (or `Field: RetryAfter`) added for each field
/// read through a trait whose type names a type parameter, as thiserror infers its bounds.
fn with_inferred_bounds(generics: &Generics, plan: &Plan<'_>, private: &TokenStream) -> Generics {
    let params: Vec<&Ident> = generics.type_params().map(|param| &param.ident).collect();
    if params.is_empty() {
        return generics.clone();
    }
    let decisions: Vec<&Decision<'_>> = match &plan.body {
        Body::With(_) => Vec::new(),
        Body::Struct(decision) => vec![decision],
        Body::Enum(cases) => cases.iter().map(|(_, decision)| decision).collect(),
    };
    let mut generics = generics.clone();
    let mut bounded: Vec<String> = Vec::new();
    for decision in decisions {
        let (ty, bound): (&Type, TokenStream) = match decision {
            Decision::From(field) => (field.ty, quote!(#private::Classify)),
            Decision::Class {
                hint: Some(field), ..
            } => (field.ty, quote!(#private::RetryAfter)),
            _ => continue,
        };
        let key = format!("{} {bound}", ty.to_token_stream());
        if !names_any(ty.to_token_stream(), &params) || bounded.contains(&key) {
            continue;
        }
        bounded.push(key);
        let predicate: WherePredicate = syn::parse_quote!(#ty: #bound);
        generics.make_where_clause().predicates.push(predicate);
    }
    generics
}

/// Whether `tokens` mention one of `params`.
fn names_any(tokens: TokenStream, params: &[&Ident]) -> bool {
    tokens.into_iter().any(|token| match token {
        TokenTree::Ident(ident) => params.iter().any(|param| **param == ident),
        TokenTree::Group(group) => names_any(group.stream(), params),
        _ => false,
    })
}
