//! The protocol's steps only a stream takes. A child of the run, so that it reads the run's
//! state without widening it; the stream's own facts are the stream's.

use std::fmt;
use std::time::Duration;

use super::{ENDED, Run};
use crate::class::Classify;
use crate::engine::count::Count;
use crate::engine::source::Source;
use crate::meter::{self, Outcome, Series};
use crate::turn::flight::AfterWait;
use crate::verdict::GaveUp;
use crate::wait::Waited;

/// The protocol's steps only a stream takes: a failure with the stream's facts, a wait before
/// a restart or a resume, its output's first delivery, and its end after it.
impl<R: Source, A: Count> Run<R, A> {
    /// Each attempt's own timeout: only a [`TimedRetry`](super::TimedRetry)'s.
    pub(crate) fn attempt_timeout(&self) -> Option<Duration> {
        self.source.timeout()
    }

    /// [`waited`](Self::waited), before the attempt `next` is: a retry, a stream's restart
    /// after its commit point, or its resume from its cursor.
    pub(crate) fn waited_for<E>(
        &mut self,
        waited: Waited<E>,
        next: AfterWait,
    ) -> Result<(), GaveUp<E>>
    where
        E: Classify + fmt::Display,
    {
        self.waited_before(waited, next)
    }

    /// The stream's output reached the caller for the first time, at its commit point: the
    /// quota counts the call a success, and the turn a commit.
    pub(crate) fn delivered(&mut self) {
        self.settle_quota();
        if let Some(flight) = self.flight() {
            flight.committed();
        }
        meter::count(self.source.op(), Series::StreamCommit);
    }

    /// The stream ended, or was dropped, after delivering output: the call is over, its last
    /// attempt a success if it was `delivering` (between attempts, the last was counted when
    /// it failed).
    pub(crate) fn ended(&mut self, delivering: bool) {
        if self.flags & ENDED != 0 {
            return;
        }
        let attempt = match delivering {
            true => self.attempt_series(None),
            false => None,
        };
        self.end(Outcome::succeeded(self.attempts()), attempt);
        self.report(None);
    }
}
