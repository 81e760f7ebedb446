//! The rules: which entry may stand where, one decision per case, and what each decision
//! delegates to or reads. The result is a [`Plan`] the expansion follows without a question.

use proc_macro2::Span;
use syn::{Error, Ident, Path};

use crate::errors::Errors;

use super::ast::{Case, Field, Input, Shape};
use super::attr::{self, Entry, Word};

/// What the impl does.
pub(crate) struct Plan<'a> {
    pub(crate) body: Body<'a>,
}

pub(crate) enum Body<'a> {
    /// `#[classify(with = path)]` on the type: the function classifies every value.
    With(Path),
    Struct(Decision<'a>),
    Enum(Vec<(&'a Ident, Decision<'a>)>),
}

/// One case's decision.
pub(crate) enum Decision<'a> {
    /// A class, with the field holding its hint if one is marked.
    Class {
        word: Word,
        hint: Option<&'a Field<'a>>,
    },
    /// As this field classifies.
    From(&'a Field<'a>),
    /// As this function says.
    With(Path),
}

/// The runtime's path: `crate = ...` on the type, else `::retry_runtime`. Read apart from the
/// rest, so the fallback impl names the same runtime as the real one would.
pub(crate) fn krate(input: &Input<'_>) -> Path {
    input
        .entries
        .iter()
        .find_map(|entry| match entry {
            Entry::Crate(_, path) => Some(path.clone()),
            _ => None,
        })
        .unwrap_or_else(|| syn::parse_quote!(::retry_runtime))
}

/// The plan, or every rule broken (added to `errors`).
pub(crate) fn plan<'a>(input: &'a Input<'a>, errors: &mut Errors) -> Option<Plan<'a>> {
    let before = errors.len();
    let type_level = type_entries(input, errors);
    // A mistake on the type (a misplaced class, an unreadable `default`) may be the decision
    // the variants lack: no "no decision" errors follow it.
    let quiet = input.troubled || errors.len() > before;
    let body = match &input.shape {
        Shape::Union(keyword) => {
            errors.push(Error::new(
                *keyword,
                "`#[derive(Classify)]` takes an enum or a struct, not a union: nothing says \
                 which field holds the failure; implement `Classify` by hand",
            ));
            return None;
        }
        Shape::Struct(case) => {
            if let Some(with) = &type_level.with {
                no_entries_under_with(case, with, errors);
                Body::With(with.clone())
            } else {
                let before = errors.len();
                errors.extend(case.unreadable.iter().cloned());
                let quiet = quiet || errors.len() > before;
                let decisions = type_level.decisions.iter().collect();
                Body::Struct(decide(case, decisions, None, quiet, errors)?)
            }
        }
        Shape::Enum(cases) => {
            if let Some(with) = &type_level.with {
                for case in cases {
                    no_entries_under_with(case, with, errors);
                }
                Body::With(with.clone())
            } else {
                let mut decided = Vec::new();
                for case in cases {
                    let before = errors.len();
                    errors.extend(case.unreadable.iter().cloned());
                    let decisions = case_entries(case, errors);
                    let quiet = quiet || errors.len() > before;
                    if let Some(decision) =
                        decide(case, decisions, type_level.default, quiet, errors)
                    {
                        decided.push((case.ident, decision));
                    }
                }
                Body::Enum(decided)
            }
        }
    };
    errors.is_empty().then_some(Plan { body })
}

/// What the type's own `#[classify(...)]` says.
#[derive(Default)]
struct TypeLevel {
    with: Option<Path>,
    default: Option<Word>,
    /// A struct's decisions (an enum's are refused here).
    decisions: Vec<Entry>,
}

fn type_entries(input: &Input<'_>, errors: &mut Errors) -> TypeLevel {
    let is_enum = matches!(input.shape, Shape::Enum(_));
    let mut level = TypeLevel::default();
    let mut seen_crate = None;
    let mut seen_with = None;
    for entry in &input.entries {
        match entry {
            Entry::Crate(key, _) => once(&mut seen_crate, key, errors),
            Entry::With(key, path) if is_enum => {
                once(&mut seen_with, key, errors);
                level.with.get_or_insert_with(|| path.clone());
            }
            Entry::Default(key, word) if is_enum => match level.default {
                Some(_) => errors.push(twice(key)),
                None => level.default = Some(*word),
            },
            Entry::Default(key, word) => errors.push(Error::new(
                key.span(),
                format!(
                    "`default` is for an enum's variants; a struct is one case: write its class \
                     itself, `#[classify({})]`",
                    word.name
                ),
            )),
            Entry::RetryAfter(key) => errors.push(Error::new(
                key.span(),
                "`retry_after` marks the field that holds the hint: put \
                 `#[classify(retry_after)]` on that field",
            )),
            Entry::Class(word) if is_enum => errors.push(Error::new(
                word.span,
                format!(
                    "a class goes on each variant of an enum, so each is a decision a reviewer \
                     sees; to give every undecided variant one, write `#[classify(default = {})]`",
                    word.name
                ),
            )),
            Entry::From(key) if is_enum => errors.push(Error::new(
                key.span(),
                format!(
                    "`{key}` goes on a variant, to classify it as its field does; an enum \
                     as a whole delegates with `#[classify(with = path)]`"
                ),
            )),
            // A struct's decision, checked with its fields.
            Entry::Class(_) | Entry::From(_) | Entry::With(..) => {
                level.decisions.push(entry.clone());
            }
        }
    }
    if let (Some(with), Some(default)) = (&level.with, &level.default) {
        errors.push(Error::new(
            default.span,
            format!(
                "`default = {}` is never used: `with = {}` classifies every variant; remove one",
                default.name,
                attr::path_text(with)
            ),
        ));
    }
    level
}

/// A variant's decisions; entries that belong elsewhere are reported.
fn case_entries<'e>(case: &'e Case<'_>, errors: &mut Errors) -> Vec<&'e Entry> {
    let mut decisions = Vec::new();
    for entry in &case.entries {
        match entry {
            Entry::Class(_) | Entry::From(_) | Entry::With(..) => decisions.push(entry),
            Entry::Default(key, word) => errors.push(Error::new(
                key.span(),
                format!(
                    "`default` goes on the enum, not on a variant; to decide this variant, \
                     write `#[classify({})]`",
                    word.name
                ),
            )),
            Entry::Crate(key, _) => errors.push(Error::new(
                key.span(),
                "`crate` goes on the enum, not on a variant",
            )),
            Entry::RetryAfter(key) => errors.push(Error::new(
                key.span(),
                "`retry_after` marks the field that holds the hint: put \
                 `#[classify(retry_after)]` on that field of the variant",
            )),
        }
    }
    decisions
}

/// With `with` on the type, any entry below it would never be read.
fn no_entries_under_with(case: &Case<'_>, with: &Path, errors: &mut Errors) {
    errors.extend(case.unreadable.iter().cloned());
    let field_entries = case.fields.iter().flat_map(|field| &field.entries);
    for entry in case.entries.iter().chain(field_entries) {
        errors.push(Error::new(
            entry.span(),
            format!(
                "`#[classify({})]` is never read: `with = {}` on the type classifies every \
                 value; remove it, or drop `with` from the type and decide each variant",
                entry.describe(),
                attr::path_text(with)
            ),
        ));
    }
}

/// The one decision for `case`, from its own entries, its fields' markers and the enum's
/// default; every mistake on the way is reported. `quiet`: a mistake already reported may be
/// the missing decision, so its absence is not reported again.
fn decide<'a>(
    case: &'a Case<'a>,
    decisions: Vec<&Entry>,
    default: Option<Word>,
    quiet: bool,
    errors: &mut Errors,
) -> Option<Decision<'a>> {
    let ident = case.ident;
    let what = case.what();
    let count = errors.len();
    let (from_field, hint_field) = field_markers(case, what, errors);
    let mut decisions = decisions.into_iter();
    let first = decisions.next();
    for extra in decisions {
        errors.push(Error::new(
            extra.span(),
            format!(
                "{what} `{ident}` has two decisions, `{}` and `{}`; keep one",
                first.map_or_else(String::new, Entry::describe),
                extra.describe()
            ),
        ));
    }
    if let (Some(decision @ (Entry::Class(_) | Entry::With(..))), Some((field, key))) =
        (first, from_field)
    {
        errors.push(Error::new(
            key,
            format!(
                "{what} `{ident}` is already decided by `{}`; delegating to field `{}` would \
                 be a second decision: remove one",
                decision.describe(),
                field.name()
            ),
        ));
    }
    let decision = match (first, from_field) {
        (Some(Entry::Class(word)), _) => Decision::Class {
            word: *word,
            hint: None,
        },
        (Some(Entry::With(_, path)), _) => Decision::With(path.clone()),
        (Some(Entry::From(_)) | None, Some((field, _))) => Decision::From(field),
        (Some(Entry::From(key)), None) => match case.fields.as_slice() {
            [only] => Decision::From(only),
            [] => {
                errors.push(Error::new(
                    key.span(),
                    format!(
                        "`{key}` classifies {what} `{ident}` as its field does, and it has no \
                         field; give it a class instead, one of {}",
                        attr::class_list()
                    ),
                ));
                return None;
            }
            several => {
                let names: Vec<String> =
                    several.iter().map(|f| format!("`{}`", f.name())).collect();
                errors.push(Error::new(
                    key.span(),
                    format!(
                        "{what} `{ident}` has {} fields ({}); mark the one to classify by with \
                         `#[classify(from)]` on that field",
                        several.len(),
                        names.join(", ")
                    ),
                ));
                return None;
            }
        },
        (None, None) => match default {
            Some(word) => Decision::Class { word, hint: None },
            None => {
                if !(quiet || errors.len() > count) {
                    errors.push(undecided(case, what));
                }
                return None;
            }
        },
        (Some(_), _) => return None,
    };
    let decision = with_hint(decision, hint_field, case, what, errors)?;
    (errors.len() == count).then_some(decision)
}

/// The hint field joined to a class that carries a hint; on any other decision it is an error.
fn with_hint<'a>(
    decision: Decision<'a>,
    hint_field: Option<(&'a Field<'a>, Span)>,
    case: &Case<'_>,
    what: &str,
    errors: &mut Errors,
) -> Option<Decision<'a>> {
    let Some((field, key)) = hint_field else {
        return Some(decision);
    };
    let decided = match &decision {
        Decision::Class { word, .. } if word.takes_hint => {
            return Some(Decision::Class {
                word: *word,
                hint: Some(field),
            });
        }
        Decision::Class { word, .. } => format!("`{}`", word.name),
        Decision::From(field) => format!("as its field `{}`", field.name()),
        Decision::With(path) => format!("by `with = {}`", attr::path_text(path)),
    };
    errors.push(Error::new(
        key,
        format!(
            "`retry_after` gives a hint to `rate_limited` or `unavailable`, and {what} `{}` is \
             classified {decided}; remove `retry_after`, or classify it `rate_limited` or \
             `unavailable`",
            case.ident
        ),
    ));
    Some(decision)
}

/// The field marked `from` and the one marked `retry_after`, each at most once, with the span
/// of the marker.
#[allow(clippy::type_complexity)]
fn field_markers<'a>(
    case: &'a Case<'a>,
    what: &str,
    errors: &mut Errors,
) -> (Option<(&'a Field<'a>, Span)>, Option<(&'a Field<'a>, Span)>) {
    let mut from: Option<(&'a Field<'a>, Span)> = None;
    let mut hint: Option<(&'a Field<'a>, Span)> = None;
    let place = if what == "struct" {
        "the struct"
    } else {
        "its variant"
    };
    for field in &case.fields {
        for entry in &field.entries {
            let (slot, marker) = match entry {
                Entry::From(key) => (&mut from, key),
                Entry::RetryAfter(key) => (&mut hint, key),
                Entry::Class(word) => {
                    errors.push(Error::new(
                        word.span,
                        format!(
                            "a class goes on {place}, not on a field: write \
                             `#[classify({})]` above `{}`",
                            word.name, case.ident
                        ),
                    ));
                    continue;
                }
                Entry::With(key, _) | Entry::Default(key, _) | Entry::Crate(key, _) => {
                    errors.push(Error::new(
                        key.span(),
                        format!("`{key}` goes on {place} or the type, not on a field"),
                    ));
                    continue;
                }
            };
            match slot {
                Some((first, _)) => errors.push(Error::new(
                    marker.span(),
                    format!(
                        "field `{}` is already marked `{marker}`; one field of {what} `{}` \
                         may be, so remove one",
                        Field::name(first),
                        case.ident
                    ),
                )),
                None => *slot = Some((field, marker.span())),
            }
        }
    }
    (from, hint)
}

/// "variant `Foo` has no decision", on its name, listing the choices.
fn undecided(case: &Case<'_>, what: &str) -> Error {
    let ident = case.ident;
    let thiserror = if case.thiserror_from.is_some() {
        "; thiserror's `#[from]` converts the error, it does not classify it: write \
         `#[classify(from)]` to classify it as the wrapped error does"
    } else {
        ""
    };
    Error::new(
        ident.span(),
        format!(
            "{what} `{ident}` has no `#[classify(...)]`: say what it means for trying again, \
             with a class, one of {}, or `from` (as its field does), or `with = path`{thiserror}",
            attr::class_list()
        ),
    )
}

fn once(seen: &mut Option<()>, key: &Ident, errors: &mut Errors) {
    if seen.replace(()).is_some() {
        errors.push(twice(key));
    }
}

fn twice(key: &Ident) -> Error {
    Error::new(key.span(), format!("`{key}` is given twice; keep one"))
}
