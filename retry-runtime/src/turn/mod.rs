//! The budget scope's family: carrying a [`Turn`] into a task, what is left of it, the future
//! that runs it, its outcome and the records of its report. `Turn`, `TurnReport` and
//! `Canceller` are at the root too; they are here as well, beside `TurnOutcome`, so one path
//! names all a turn returns. One concept a file: the task-local scope in `scope.rs`, running a
//! turn in `run.rs`, its cancel in `cancel.rs`, its report in `report.rs`, the calls in flight
//! that count in it in `ledger.rs` (their places in `slab.rs`), and a call's record in it in
//! `flight.rs`.
//!
//! It owns the turn's deadline, cancel, hooks and report. It must not retry, wait or decide:
//! the engine asks it what is left and whether it is over, and tells its flight what happened.
//!
//! ```
//! use retry_runtime::turn::{Canceller, Turn, TurnOutcome, TurnReport};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let turn = Turn::new(Duration::from_secs(60));
//! let canceller: Canceller = turn.canceller();
//! canceller.cancel();
//! let (outcome, report): (TurnOutcome<()>, TurnReport) = turn.run(async {}).await;
//! assert!(outcome.is_cancelled());
//! assert_eq!(report.calls(), 0);
//! # }
//! ```

pub(crate) mod cancel;
pub(crate) mod flight;
mod ledger;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod scope;
mod slab;

pub use crate::op::{Op, OpLiteral, OpName};
pub use cancel::Canceller;
pub use report::{CutWait, GaveUpRecord, InFlight, TurnReport};
pub use run::{Turn, TurnFuture, TurnOutcome};
pub use scope::{TurnHandle, current, remaining};
