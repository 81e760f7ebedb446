//! Each key's value, checked on its own once [`read`](super::read) has read it as its kind:
//! the first half of `Config::validate` (the rules across keys are `Config::check_across`).
//! Forms other libraries write are answered by [`foreign`](super::foreign).

use syn::{Error, Expr, ExprLit, ExprPath, Lit, LitStr, Path};

use super::{At, BudgetChoice, Given, PolicyChoice, foreign};
use crate::errors::Errors;
use crate::names::{self, JITTERS, POLICIES};
use crate::retry::duration;
use crate::retry::key::Key;
use crate::suggest;

/// `crate`: the string holds a path.
pub(super) fn krate(given: &Given, lit: &LitStr) -> syn::Result<Path> {
    lit.parse::<Path>().map_err(|_| {
        given.error(
            "`crate` takes the runtime crate's path as a string, like `crate = \"retry_runtime\"`",
        )
    })
}

/// `policy = "..."`: one of the built-ins.
pub(super) fn built_in_policy(given: &Given, lit: &LitStr) -> syn::Result<PolicyChoice> {
    let written = lit.value();
    match names::meaning(POLICIES, &written) {
        Some(konst) => Ok(PolicyChoice::BuiltIn(At {
            value: konst,
            span: lit.span(),
        })),
        None => {
            let known = names::written(POLICIES);
            Err(given.error(format!(
                "unknown policy `\"{written}\"`; the built-in policies are {}, or pass a path \
                 to your own `const` `Policy`, like `policy = crate::MODEL_POLICY`{}",
                suggest::one_of(&known, true),
                quoted_hint(&written, &known),
            )))
        }
    }
}

/// "; did you mean `\"x\"`?" for string-valued keys.
fn quoted_hint(written: &str, names: &[&str]) -> String {
    suggest::nearest(written, names, &[])
        .map(|near| format!("; did you mean `\"{near}\"`?"))
        .unwrap_or_default()
}

pub(super) fn attempts(given: &Given, n: i128) -> syn::Result<At<u32>> {
    if n == 0 {
        return Err(given.error(
            "`attempts = 0` makes no attempt at all; `attempts` counts the first call too, so use \
             `attempts = 1` for a call that is never retried",
        ));
    }
    if n < 0 {
        return Err(given
            .error("`attempts` counts the calls made, the first included, so it is at least 1"));
    }
    let value = u32::try_from(n)
        .map_err(|_| given.error(format!("`attempts` is too large; the most is {}", u32::MAX)))?;
    Ok(At {
        value,
        span: given.span(),
    })
}

/// `base_ms` and `cap_ms`: a positive number of milliseconds.
pub(super) fn millis(given: &Given, n: i128) -> syn::Result<At<u64>> {
    let name = given.name();
    if n == 0 {
        let why = if given.key == Key::BaseMs {
            "a ladder that does not back off hammers the far side while it is down"
        } else {
            "a cap of zero would make every wait zero"
        };
        return Err(given.error(format!(
            "`{name} = 0`: {why}; use at least 1 (milliseconds)"
        )));
    }
    if n < 0 {
        return Err(given.error(format!(
            "`{name}` is a wait in milliseconds and cannot be negative; use at least 1"
        )));
    }
    let value = u64::try_from(n)
        .map_err(|_| given.error(format!("`{name}` is too large; the most is {}", u64::MAX)))?;
    Ok(At {
        value,
        span: given.span(),
    })
}

/// `multiplier = -2`, whatever follows the `-`.
pub(super) fn negative_multiplier(given: &Given) -> Error {
    given.error("`multiplier` cannot be negative; use at least 1 (1 keeps every wait at `base_ms`)")
}

pub(super) fn multiplier(given: &Given, value: f64, suffix: &str) -> syn::Result<At<f64>> {
    if !suffix.is_empty() {
        return Err(given.error(format!(
            "`multiplier` takes a plain number; remove the suffix `{suffix}`"
        )));
    }
    if value < 1.0 {
        return Err(given.error(
            "`multiplier` below 1 would shrink the waits; use at least 1 (1 keeps every wait at \
             `base_ms`)",
        ));
    }
    // The policy keeps the multiplier in thousandths, in a u32.
    let most = f64::from(u32::MAX) / 1000.0;
    if value > most {
        return Err(given.error(format!(
            "`multiplier` is too large; the most is {}",
            most.floor()
        )));
    }
    Ok(At {
        value,
        span: given.span(),
    })
}

pub(super) fn jitter(given: &Given, lit: &LitStr) -> syn::Result<At<&'static str>> {
    let written = lit.value();
    match names::meaning(JITTERS, &written) {
        Some(variant) => Ok(At {
            value: variant,
            span: lit.span(),
        }),
        None => {
            let known = names::written(JITTERS);
            Err(given.error(format!(
                "unknown jitter `\"{written}\"`; expected one of {}{}",
                suggest::one_of(&known, true),
                quoted_hint(&written, &known)
            )))
        }
    }
}

pub(super) fn budget(given: &Given, lit: &LitStr) -> syn::Result<At<BudgetChoice>> {
    let text = lit.value();
    let value = if text == "turn" {
        BudgetChoice::Turn
    } else {
        let millis = duration::millis(&text)
            .map_err(|why| given.error(duration::message(Key::Budget, &text, why)))?;
        BudgetChoice::Within { millis, text }
    };
    Ok(At {
        value,
        span: lit.span(),
    })
}

/// `timeout`: a duration literal, as `budget` takes (but not `"turn"`: every attempt is
/// bounded by the turn already).
pub(super) fn timeout(given: &Given, lit: &LitStr) -> syn::Result<At<u64>> {
    let text = lit.value();
    if text == "turn" {
        return Err(given.error(
            "every attempt is already bounded by the rest of the turn; `timeout` takes a \
             duration, like `timeout = \"30s\"`",
        ));
    }
    let millis = duration::millis(&text)
        .map_err(|why| given.error(duration::message(Key::Timeout, &text, why)))?;
    Ok(At {
        value: millis,
        span: lit.span(),
    })
}

pub(super) fn name(given: &Given, lit: LitStr) -> syn::Result<LitStr> {
    if lit.value().is_empty() {
        return Err(
            given.error("`name` is empty; it names the call in notices, like `name = \"model\"`")
        );
    }
    Ok(lit)
}

/// `[A, B]` (or a single `A`): each a `Class` variant, each once. Every bad entry is reported.
pub(super) fn class_list(
    given: &Given,
    entries: &[Expr],
    errors: &mut Errors,
) -> Vec<At<&'static str>> {
    let list = given.name();
    let mut classes: Vec<At<&'static str>> = Vec::new();
    for entry in entries {
        let Some(class) = errors.keep_at(given.position, class_name(entry, list)) else {
            continue;
        };
        if classes.iter().any(|c| c.value == class.value) {
            let message = format!("`{}` is listed twice in `{list}`", class.value);
            errors.push_at(given.position, Error::new(class.span, message));
            continue;
        }
        classes.push(class);
    }
    classes
}

/// One entry of a class list: `Timeout` or `Class::Timeout`.
fn class_name(entry: &Expr, list: &str) -> syn::Result<At<&'static str>> {
    if let Expr::Lit(ExprLit {
        lit: Lit::Str(lit), ..
    }) = entry
    {
        return Err(foreign::quoted_class(entry, lit, list));
    }
    let Expr::Path(ExprPath {
        qself: None, path, ..
    }) = entry
    else {
        return Err(Error::new_spanned(
            entry,
            format!(
                "`{list}` lists `Class` variants by name, like `{list} = [Timeout, InvalidOutput]`"
            ),
        ));
    };
    let Some(last) = path.segments.last() else {
        return Err(Error::new_spanned(entry, "expected a `Class` variant"));
    };
    let written = last.ident.to_string();
    match names::class_by_variant(&written) {
        Some(class) => Ok(At {
            value: class.variant,
            span: last.ident.span(),
        }),
        None => Err(Error::new_spanned(
            entry,
            format!(
                "unknown class `{written}`; expected one of {}{}",
                suggest::one_of(&names::class_variants(), false),
                suggest::hint(&written, &names::class_variants(), &[])
            ),
        )),
    }
}
