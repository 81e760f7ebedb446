//! The budget scope's family: carrying a [`Turn`](crate::Turn) into a task, what is left of
//! it, its outcome and the records of its report. `Turn`, `TurnReport` and `Canceller` are at
//! the root; the implementation is in `scope.rs`.

pub(crate) mod scope;

pub use scope::{
    CutWait, GaveUpRecord, InFlight, Op, OpName, TurnHandle, TurnOutcome, current, remaining,
};
