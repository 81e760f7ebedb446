//! The breaker around Redis: after three failures in a row (an operation that failed or timed
//! out, a connection that could not be made), Redis is skipped for two seconds, then tried
//! again. Its opening and closing are logged (target `retry`) and counted
//! (`retry_fleet_store_total{event}`): the fleet store is degraded, and back.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Failures in a row that open the breaker.
const FAILURES: u32 = 3;
/// How long an open breaker skips Redis.
const SKIP: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub(super) struct Breaker {
    state: Mutex<BreakerState>,
}

#[derive(Debug, Clone, Copy)]
struct BreakerState {
    failures: u32,
    /// Open until then.
    open_until: Option<Instant>,
}

impl Breaker {
    pub(super) const fn new() -> Breaker {
        Breaker {
            state: Mutex::new(BreakerState {
                failures: 0,
                open_until: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BreakerState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether Redis may be tried now: closed, or open past its skip (half-open: one try).
    pub(super) fn allows(&self) -> bool {
        self.lock()
            .open_until
            .is_none_or(|until| Instant::now() >= until)
    }

    /// Whether Redis is being skipped.
    pub(super) fn is_open(&self) -> bool {
        self.lock().open_until.is_some()
    }

    /// An operation succeeded: the breaker closes.
    pub(super) fn succeeded(&self) {
        let mut state = self.lock();
        state.failures = 0;
        if state.open_until.take().is_some() {
            drop(state);
            crate::meter::fleet("back");
            tracing::info!(target: "retry", "the fleet store is back: upstreams are shared again");
        }
    }

    /// An operation failed (`why`): after three in a row, Redis is skipped for a while.
    /// Whether the breaker opened with it (the fleet store is degraded from now).
    pub(super) fn failed(&self, why: &'static str) -> bool {
        let mut state = self.lock();
        state.failures = state.failures.saturating_add(1);
        if state.failures < FAILURES {
            return false;
        }
        let was_open = state.open_until.is_some();
        state.open_until = Some(Instant::now() + SKIP);
        drop(state);
        if !was_open {
            crate::meter::fleet("degraded");
            tracing::warn!(
                target: "retry",
                why,
                "the fleet store is degraded ({why}): each process goes on alone, its upstreams in-process"
            );
        }
        !was_open
    }
}
