//! Where a run finds its configuration ([`Source`]): the policy, the name, the budget, the
//! quota, the clock and an attempt's timeout. It must not hold a call's state.

use std::time::Duration;

use crate::clock::Clock;
use crate::deadline::Deadline;
use crate::op::Op;
use crate::policy::Policy;
use crate::quota::Quota;

/// Where a [`Run`] finds its configuration: a [`Retry`](super::Retry) or a
/// [`TimedRetry`](super::TimedRetry) it owns ([`Retry::run`](super::Retry::run)), or a
/// `&'static` one (the attribute's). Not public API.
#[doc(hidden)]
pub trait Source: Clocked {
    /// The policy.
    fn policy(&self) -> &Policy;
    /// The operation's name.
    fn op(&self) -> &str;
    /// The operation's name, as a turn's report keeps it.
    fn op_name(&self) -> Op;
    /// The budget.
    fn budget(&self) -> Deadline;
    /// The quota, if any.
    fn quota(&self) -> Option<&Quota>;
    /// The clock.
    fn clock(&self) -> &Self::Clock;
    /// Each attempt's timeout: only a [`TimedRetry`](super::TimedRetry) has one.
    #[inline]
    fn timeout(&self) -> Option<Duration> {
        None
    }
}

/// The clock of a [`Source`], apart from it: its impls have no bound on what the retry
/// borrows, so a type that names the clock's sleep through it (a stream's) is `Send` whatever
/// lifetimes the retry borrows, where a projection through `Source` (whose impls need a
/// `'static` name) would not be. Not public API.
#[doc(hidden)]
pub trait Clocked {
    /// The clock of the retry.
    type Clock: Clock;
}

impl<S: Clocked> Clocked for &S {
    type Clock = S::Clock;
}

/// A borrowed source: the attribute's `&'static` one.
impl<S: Source> Source for &S {
    #[inline]
    fn policy(&self) -> &Policy {
        (**self).policy()
    }
    #[inline]
    fn op(&self) -> &str {
        (**self).op()
    }
    #[inline]
    fn op_name(&self) -> Op {
        (**self).op_name()
    }
    #[inline]
    fn budget(&self) -> Deadline {
        (**self).budget()
    }
    #[inline]
    fn quota(&self) -> Option<&Quota> {
        (**self).quota()
    }
    #[inline]
    fn clock(&self) -> &S::Clock {
        (**self).clock()
    }
    #[inline]
    fn timeout(&self) -> Option<Duration> {
        (**self).timeout()
    }
}
