//! Each [`Kind`] of value read from its tokens, as its key's kind says: a value of another kind
//! is "`key` takes ...", and a form other libraries write gets its hint. What the value must be
//! beyond its kind (a jitter's name, a positive number) is its key's check, in `value`.

use syn::{Expr, ExprLit, ExprPath, ExprUnary, Lit, LitStr, UnOp};

use super::{Given, foreign};
use crate::retry::key::Kind;

/// A value, read as its key's kind says.
pub(super) enum Value {
    /// [`Kind::PolicyOrPath`] written as a string: a built-in's name, unchecked.
    PolicyName(LitStr),
    /// [`Kind::PolicyOrPath`] written as a path, or [`Kind::QuotaPath`].
    Path(ExprPath),
    /// [`Kind::WholeNumber`], its sign included.
    WholeNumber(i128),
    /// [`Kind::Number`], with its suffix (refused by the key, in its own words).
    Number { value: f64, suffix: String },
    /// [`Kind::Number`] with a `-` before it.
    Negative,
    /// [`Kind::Word`], [`Kind::Duration`], [`Kind::Text`] and [`Kind::PathInText`]: the string.
    Text(LitStr),
    /// [`Kind::ClassList`]: its entries, each unchecked.
    Entries(Vec<Expr>),
    /// [`Kind::Expression`].
    Expr(Box<Expr>),
}

/// The value of `given`, read as its key's kind.
pub(super) fn read(given: &Given) -> syn::Result<Value> {
    match given.key.kind() {
        Kind::PolicyOrPath => policy_or_path(given),
        Kind::WholeNumber => whole_number(given).map(Value::WholeNumber),
        Kind::Number => number(given),
        Kind::Word => word(given).map(Value::Text),
        Kind::Duration => duration(given).map(Value::Text),
        Kind::Text | Kind::PathInText => string(given).map(Value::Text),
        Kind::QuotaPath => quota_path(given).map(Value::Path),
        Kind::UpstreamPath | Kind::UpstreamsPath => static_path(given).map(Value::Path),
        Kind::ClassList => entries(given).map(Value::Entries),
        Kind::Expression => given.expr().map(|expr| Value::Expr(Box::new(expr))),
    }
}

fn policy_or_path(given: &Given) -> syn::Result<Value> {
    match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(Value::PolicyName(lit)),
        Expr::Path(path) => match foreign::unquoted_policy(given, &path) {
            Some(error) => Err(error),
            None => Ok(Value::Path(path)),
        },
        _ => Err(given.wrong_type()),
    }
}

/// An integer literal as written, sign included.
fn whole_number(given: &Given) -> syn::Result<i128> {
    let (negative, lit) = match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => (false, lit),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match *expr {
            Expr::Lit(ExprLit {
                lit: Lit::Int(lit), ..
            }) => (true, lit),
            _ => return Err(given.wrong_type()),
        },
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => return Err(foreign::number_in_string(given, &lit)),
        _ => return Err(given.wrong_type()),
    };
    if !lit.suffix().is_empty() {
        return Err(given.error(format!(
            "`{}` takes a plain whole number; remove the suffix `{}`",
            given.name(),
            lit.suffix()
        )));
    }
    let magnitude: i128 = lit
        .base10_parse()
        .map_err(|_| given.error(format!("`{}` is too large", given.name())))?;
    Ok(if negative { -magnitude } else { magnitude })
}

fn number(given: &Given) -> syn::Result<Value> {
    let (value, suffix) = match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Float(lit),
            ..
        }) => (lit.base10_parse::<f64>()?, lit.suffix().to_owned()),
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => (lit.base10_parse::<f64>()?, lit.suffix().to_owned()),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => return Ok(Value::Negative),
        _ => return Err(given.wrong_type()),
    };
    Ok(Value::Number { value, suffix })
}

fn string(given: &Given) -> syn::Result<LitStr> {
    match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit),
        _ => Err(given.wrong_type()),
    }
}

/// A string; a bare word gets "write `key = \"word\"`".
fn word(given: &Given) -> syn::Result<LitStr> {
    string(given).map_err(|_| foreign::unquoted_word(given).unwrap_or_else(|| given.wrong_type()))
}

/// A string; a bare number or word gets the string it lacks.
fn duration(given: &Given) -> syn::Result<LitStr> {
    match given.expr()? {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit),
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => Err(foreign::unquoted_duration(given, &int)),
        _ => Err(foreign::unquoted_word(given).unwrap_or_else(|| given.wrong_type())),
    }
}

fn quota_path(given: &Given) -> syn::Result<ExprPath> {
    match given.expr()? {
        Expr::Path(path) => Ok(path),
        Expr::Reference(reference) => Err(foreign::borrowed_quota(given, &reference)),
        _ => Err(given.wrong_type()),
    }
}

/// A path to a `static`: a borrow is refused as a quota's is not (the key borrows it).
fn static_path(given: &Given) -> syn::Result<ExprPath> {
    match given.expr()? {
        Expr::Path(path) => Ok(path),
        _ => Err(given.wrong_type()),
    }
}

fn entries(given: &Given) -> syn::Result<Vec<Expr>> {
    match given.expr()? {
        Expr::Array(array) => Ok(array.elems.into_iter().collect()),
        path @ Expr::Path(_) => Ok(vec![path]),
        _ => Err(given.wrong_type()),
    }
}
