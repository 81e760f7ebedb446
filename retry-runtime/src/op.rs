//! An operation's name: what a [`Retry`](crate::Retry) carries ([`OpName`]: a literal, an
//! `Arc<str>` or a `String`) and what a call leaves in its turn's report ([`Op`]). The engine
//! names each call with it; the turn's records keep it. It owns the name's forms and their
//! conversion; it must not read a turn or a clock.

use std::fmt;
use std::sync::Arc;

/// An operation's name as a turn's report keeps it: a literal, or a shared name made at run
/// time. It reads as a `&str`.
///
/// ```
/// use retry_runtime::turn::Op;
/// let op = Op::from("model");
/// assert_eq!(op, "model");
/// assert_eq!(op.as_str(), "model");
/// assert_eq!(Op::from(std::sync::Arc::<str>::from("tenant")).to_string(), "tenant");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Op(OpRepr);

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum OpRepr {
    Literal(&'static str),
    Shared(Arc<str>),
}

impl Op {
    /// The name.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            OpRepr::Literal(op) => op,
            OpRepr::Shared(op) => op,
        }
    }
}

impl From<&'static str> for Op {
    fn from(op: &'static str) -> Op {
        Op(OpRepr::Literal(op))
    }
}

impl From<Arc<str>> for Op {
    fn from(op: Arc<str>) -> Op {
        Op(OpRepr::Shared(op))
    }
}

impl std::ops::Deref for Op {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Op {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for Op {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Op {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name a [`Retry`](crate::Retry) can carry: a literal (`&'static str`, free per call), an
/// `Arc<str>` (a reference-count increment per call in a turn), or a `String` (one allocation
/// per call in a turn: prefer `Arc<str>`).
///
/// ```
/// use retry_runtime::turn::OpName;
/// use std::sync::Arc;
///
/// assert_eq!("model".to_op(), "model");
/// let tenant: Arc<str> = Arc::from("model:acme");
/// assert_eq!(tenant.to_op().as_str(), "model:acme");
/// ```
pub trait OpName: AsRef<str> {
    /// The name as a turn's report keeps it.
    fn to_op(&self) -> Op;
}

/// A literal name, as [`Retry::named`](crate::Retry::named) gives it and a `Retry` carries by
/// default: a `&'static str` in a type with no lifetime of its own, so that a future or a
/// stream holding the `Retry` is `Send` in a spawned task (where rustc checks a `&'static str`
/// for every lifetime, and a trait implemented for `'static` alone fails), and free per call.
///
/// ```
/// use retry_runtime::turn::{OpLiteral, OpName};
///
/// let name = OpLiteral::new("model");
/// assert_eq!(name.as_ref(), "model");
/// assert_eq!(name.to_op(), "model");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpLiteral(&'static str);

impl OpLiteral {
    /// The name `op`.
    pub const fn new(op: &'static str) -> OpLiteral {
        OpLiteral(op)
    }
}

impl AsRef<str> for OpLiteral {
    #[inline]
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl OpName for OpLiteral {
    #[inline]
    fn to_op(&self) -> Op {
        Op(OpRepr::Literal(self.0))
    }
}

impl OpName for &'static str {
    #[inline]
    fn to_op(&self) -> Op {
        Op(OpRepr::Literal(self))
    }
}

impl OpName for Arc<str> {
    fn to_op(&self) -> Op {
        Op(OpRepr::Shared(Arc::clone(self)))
    }
}

impl OpName for String {
    fn to_op(&self) -> Op {
        Op(OpRepr::Shared(Arc::from(self.as_str())))
    }
}
