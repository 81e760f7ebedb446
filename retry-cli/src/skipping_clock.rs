//! The clock `BACKOFF_SKIP_WAITS` runs on: it records each wait instead of sleeping it,
//! counts the skipped time as spent, so a `--budget` sees the waits, and draws no jitter. The shipped binary's
//! tests use it; the library's test machinery stays out of the binary.

use std::future::{Ready, ready};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use retry_runtime::{Clock, Draw};
use tokio::time::Instant;

/// Set to skip waits: they are printed, not slept (the CLI's own tests use it).
pub(crate) const SKIP_WAITS: &str = "BACKOFF_SKIP_WAITS";

/// Whether `BACKOFF_SKIP_WAITS` asks for waits to be printed instead of slept.
pub(crate) fn skip_waits() -> bool {
    std::env::var_os(SKIP_WAITS).is_some_and(|value| !value.is_empty() && value != "0")
}

/// Records waits instead of sleeping them.
#[derive(Debug, Clone, Default)]
pub(crate) struct SkippingClock {
    waits: Arc<Mutex<Vec<Duration>>>,
}

impl SkippingClock {
    /// The waits skipped so far, in order.
    pub(crate) fn waits(&self) -> Vec<Duration> {
        self.waits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn skipped(&self) -> Duration {
        self.waits()
            .iter()
            .fold(Duration::ZERO, |sum, wait| sum.saturating_add(*wait))
    }
}

impl Clock for SkippingClock {
    type Sleep = Ready<()>;

    fn now(&self) -> Instant {
        // Saturating: a skipped wait near `Duration::MAX` leaves the clock at its far end.
        let now = Instant::now();
        now.checked_add(self.skipped())
            .unwrap_or(now + Duration::from_secs(86_400 * 365 * 30))
    }

    fn sleep(&self, wait: Duration) -> Ready<()> {
        self.waits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(wait);
        ready(())
    }

    /// No jitter: a run with skipped waits reports the ideal ladder, reproducibly.
    fn draw(&self) -> Draw {
        Draw::IDEAL
    }
}
