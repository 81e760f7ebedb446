//! The budget scope's family: carrying a [`Turn`](crate::Turn) into a task, what is left of
//! it, its outcome and the records of its report. `Turn`, `TurnReport` and `Canceller` are at
//! the root; the scope is in `scope.rs`, a call's record in it in `flight.rs`.
//!
//! It owns the turn's deadline, cancel, hooks and report. It must not retry, wait or decide:
//! the engine asks it what is left and whether it is over, and tells its flight what happened.

pub(crate) mod flight;
pub(crate) mod scope;

pub use scope::{
    CutWait, GaveUpRecord, InFlight, Op, OpName, TurnHandle, TurnOutcome, current, remaining,
};
