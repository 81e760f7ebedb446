//! The budget scope's family: carrying a [`Turn`](crate::Turn) into a task, what is left of
//! it, the future that runs it, its outcome and the records of its report. `Turn`,
//! `TurnReport` and `Canceller` are at the root. One concept a file: the task-local scope in
//! `scope.rs`, running a turn in `run.rs`, its cancel in `cancel.rs`, its report in
//! `report.rs`, and a call's record in it in `flight.rs`.
//!
//! It owns the turn's deadline, cancel, hooks and report. It must not retry, wait or decide:
//! the engine asks it what is left and whether it is over, and tells its flight what happened.

pub(crate) mod cancel;
pub(crate) mod flight;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod scope;

pub use crate::op::{Op, OpName};
pub use report::{CutWait, GaveUpRecord, InFlight};
pub use run::{TurnFuture, TurnOutcome};
pub use scope::{TurnHandle, current, remaining};
