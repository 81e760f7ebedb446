//! What a stream's failure adds to the facts its run decides on ([`StreamFacts`]), and how a
//! resumable stream's ladder is counted ([`Resuming`]): plain values the stream keeps and
//! hands over on each failure. It must not decide or count anything.

use std::time::Duration;

use crate::notice::Reached;

/// What a stream's failure adds to the facts the run decides on: how far its attempt got,
/// whether it had delivered output (and whether the caller lets it restart), and, if it is
/// resumable, how its ladder is counted. The stream keeps these; the run only reads them.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "stream"), allow(dead_code))]
pub(crate) struct StreamFacts<'a> {
    /// How far the failed attempt got.
    pub(crate) reached: Reached,
    /// The attempt had delivered output: past its commit point, or resumed past it.
    pub(crate) committed: bool,
    /// The caller opted in to restarting the stream after its commit point.
    pub(crate) restartable: bool,
    /// A resumable stream's ladder and cursor.
    pub(crate) resuming: Option<Resuming<'a>>,
}

impl StreamFacts<'_> {
    /// Whether the failure resumes from the stream's cursor.
    pub(crate) fn resumes(&self) -> bool {
        self.resuming.is_some_and(|resuming| resuming.resumes)
    }

    /// Whether a retry would be a restart: after delivered output, opted in, not a resume,
    /// which repeats nothing.
    pub(crate) fn restarts(&self) -> bool {
        self.committed && self.restartable && !self.resumes()
    }
}

/// How a failure of a resumable stream is decided: on a ladder counted from its last
/// renewal (a resume that brought something new starts it again), whatever the failure; and,
/// if it `resumes` from its cursor, with the server's reconnection time as a hint, announced
/// as a resume from `from`, a refused reopen leaving the outcome unknown.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "stream"), allow(dead_code))]
pub(crate) struct Resuming<'a> {
    /// The attempts made before the ladder was last renewed.
    pub(crate) attempts_before: u32,
    /// The time waited before it was last renewed.
    pub(crate) waited_before: Duration,
    /// The failure resumes from the cursor; otherwise the stream is opened afresh, or ends.
    pub(crate) resumes: bool,
    /// The failed attempt was a reopen from the cursor that did not open.
    pub(crate) reopen: bool,
    /// The server's reconnection time (SSE `retry:`).
    pub(crate) reconnect: Option<Duration>,
    /// The cursor, as text.
    pub(crate) from: &'a str,
}
