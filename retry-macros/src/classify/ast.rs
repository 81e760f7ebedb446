//! The derive's input as the derive sees it: the type's entries, and each case (the struct, or
//! each variant of the enum) with its entries and its fields' entries. Nothing is checked
//! here but the syntax of `#[classify(...)]`.

use proc_macro2::Span;
use syn::{Attribute, Data, DeriveInput, Error, Fields, Ident, Index, Member, Type};

use super::attr::{self, Entry};
use crate::errors::Errors;

/// The type being derived for.
pub(crate) struct Input<'a> {
    /// The entries on the type itself.
    pub(crate) entries: Vec<Entry>,
    /// Whether the type's own `#[classify(...)]` had an unreadable entry.
    pub(crate) troubled: bool,
    pub(crate) shape: Shape<'a>,
}

pub(crate) enum Shape<'a> {
    /// A struct is one case: the type's entries are its decision.
    Struct(Case<'a>),
    Enum(Vec<Case<'a>>),
    /// A union, with its keyword.
    Union(Span),
}

/// The struct, or one variant.
pub(crate) struct Case<'a> {
    pub(crate) ident: &'a Ident,
    /// The variant's entries (empty for a struct: its entries are the type's).
    pub(crate) entries: Vec<Entry>,
    pub(crate) fields: Vec<Field<'a>>,
    /// Where thiserror's `#[from]` or `#[source]` was written, if it was: it converts and
    /// chains, it does not classify, and the message for an undecided case says so.
    pub(crate) thiserror_from: Option<Span>,
    /// The entries of the variant or its fields that could not be read, reported in the
    /// order of the cases. Any one means the user meant to decide something, so "no
    /// decision" would only repeat the error.
    pub(crate) unreadable: Vec<Error>,
    /// A variant of an enum, or a struct.
    pub(crate) is_variant: bool,
}

impl Case<'_> {
    /// "variant" or "struct", for messages.
    pub(crate) fn what(&self) -> &'static str {
        if self.is_variant { "variant" } else { "struct" }
    }
}

pub(crate) struct Field<'a> {
    pub(crate) member: Member,
    pub(crate) ty: &'a Type,
    pub(crate) entries: Vec<Entry>,
}

impl Field<'_> {
    /// How the field is named in messages: `source`, or `0`.
    pub(crate) fn name(&self) -> String {
        match &self.member {
            Member::Named(ident) => ident.to_string(),
            Member::Unnamed(index) => index.index.to_string(),
        }
    }
}

impl<'a> Input<'a> {
    /// Reads every `#[classify(...)]` of `input`; syntax mistakes on the type go to `errors`,
    /// those of a case stay with the case.
    pub(crate) fn from_syn(input: &'a DeriveInput, errors: &mut Errors) -> Input<'a> {
        let entries = attr::entries(&input.attrs, errors);
        let troubled = !errors.is_empty();
        let shape = match &input.data {
            Data::Struct(data) => Shape::Struct(Case::new(&input.ident, &[], &data.fields, false)),
            Data::Enum(data) => Shape::Enum(
                data.variants
                    .iter()
                    .map(|variant| Case::new(&variant.ident, &variant.attrs, &variant.fields, true))
                    .collect(),
            ),
            Data::Union(data) => Shape::Union(data.union_token.span),
        };
        Input {
            entries,
            troubled,
            shape,
        }
    }
}

impl<'a> Case<'a> {
    fn new(
        ident: &'a Ident,
        attrs: &[Attribute],
        fields: &'a Fields,
        is_variant: bool,
    ) -> Case<'a> {
        let mut errors = Errors::default();
        let errors = &mut errors;
        let entries = attr::entries(attrs, errors);
        let mut thiserror_from = None;
        let fields = fields
            .iter()
            .enumerate()
            .map(|(i, field)| {
                if let Some(from) = field
                    .attrs
                    .iter()
                    .find(|a| a.path().is_ident("from") || a.path().is_ident("source"))
                {
                    thiserror_from.get_or_insert(from.pound_token.span);
                }
                Field {
                    member: field.ident.clone().map_or_else(
                        || {
                            Member::Unnamed(Index {
                                index: u32::try_from(i).unwrap_or(u32::MAX),
                                span: Span::call_site(),
                            })
                        },
                        Member::Named,
                    ),
                    ty: &field.ty,
                    entries: attr::entries(&field.attrs, errors),
                }
            })
            .collect();
        Case {
            ident,
            entries,
            fields,
            thiserror_from,
            unreadable: std::mem::take(errors).into_vec(),
            is_variant,
        }
    }
}
