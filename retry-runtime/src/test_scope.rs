//! The test scope (feature `test-util`, shown as `testing::scope`): waits recorded, not
//! slept, and jitter fixed. A room of its own below the clock, which reads it, apart from the
//! fault scripts above the HTTP table. It must not be read by the default clock unless
//! feature `test-util` is on (tokio's rule for its test machinery).

use std::any::Any;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::draw::Draw;

tokio::task_local! {
    static SCOPE: ScopeState;
}

#[derive(Debug)]
struct ScopeState {
    draw: Draw,
    // Shared, so a fault server started in the scope reads its clock from its own tasks.
    waits: Arc<Mutex<Vec<Duration>>>,
    /// The state of each shared thing this scope keeps its own of (an upstream's), made at
    /// its first use, by the shared thing's address.
    kept: Mutex<Vec<(usize, &'static (dyn Any + Send + Sync))>>,
}

/// The waits a testing scope recorded, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recorded {
    waits: Vec<Duration>,
}

impl Recorded {
    /// Each wait the engine chose, in order.
    pub fn waits(&self) -> &[Duration] {
        &self.waits
    }

    /// The waits added up.
    pub fn total(&self) -> Duration {
        self.waits
            .iter()
            .fold(Duration::ZERO, |sum, wait| sum.saturating_add(*wait))
    }
}

/// Run `future` with waits recorded instead of slept and no jitter (every wait is its ideal).
///
/// Time inside the scope reads as tokio's time plus every skipped wait, so budgets and turns
/// see the waits as spent. The scope covers this task only, not tasks it spawns.
pub async fn scope<F: Future>(future: F) -> (F::Output, Recorded) {
    scope_with_draw(Draw::IDEAL, future).await
}

/// Like [`scope`], with every jitter draw fixed at `draw`.
///
/// ```
/// use retry_runtime::{testing, Class, Draw, Policy, Retry};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // The lowest draw: equal jitter halves every wait.
/// let (_, recorded) = testing::scope_with_draw(Draw::from_unit(0.0), async {
///     Retry::new(&Policy::AVAILABILITY).run(async |_| Err::<(), _>(Class::Transport)).await
/// })
/// .await;
/// assert_eq!(recorded.waits(), [125, 250, 500].map(Duration::from_millis));
/// # }
/// ```
pub async fn scope_with_draw<F: Future>(draw: Draw, future: F) -> (F::Output, Recorded) {
    let state = ScopeState {
        draw,
        waits: Arc::new(Mutex::new(Vec::new())),
        kept: Mutex::new(Vec::new()),
    };
    let mut scoped = pin!(SCOPE.scope(state, future));
    let output = scoped.as_mut().await;
    let waits = scoped
        .as_mut()
        .take_value()
        .map(|state| sum_of(&state.waits).1)
        .unwrap_or_default();
    (output, Recorded { waits })
}

/// Records `wait` if a testing scope is active; says whether one was.
pub(crate) fn record(wait: Duration) -> bool {
    SCOPE
        .try_with(|state| {
            state
                .waits
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(wait);
        })
        .is_ok()
}

/// The time skipped by recorded waits so far (zero outside a scope).
fn skipped() -> Duration {
    SCOPE
        .try_with(|state| sum_of(&state.waits).0)
        .unwrap_or(Duration::ZERO)
}

/// The waits recorded so far, added up, and a copy of them.
fn sum_of(waits: &Mutex<Vec<Duration>>) -> (Duration, Vec<Duration>) {
    let waits = waits.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let sum = waits
        .iter()
        .fold(Duration::ZERO, |sum, wait| sum.saturating_add(*wait));
    (sum, waits)
}

/// The clock of the scope this task runs in, for another task to read: tokio's time plus
/// every wait the scope has skipped so far.
#[cfg(feature = "http")]
#[derive(Debug, Clone)]
pub(crate) struct ScopeClock {
    waits: Option<Arc<Mutex<Vec<Duration>>>>,
}

#[cfg(feature = "http")]
impl ScopeClock {
    /// The clock of the current task's scope; outside one, tokio's clock.
    pub(crate) fn current() -> ScopeClock {
        ScopeClock {
            waits: SCOPE.try_with(|state| Arc::clone(&state.waits)).ok(),
        }
    }

    /// Now, on this clock.
    pub(crate) fn now(&self) -> Instant {
        let skipped = self
            .waits
            .as_ref()
            .map_or(Duration::ZERO, |waits| sum_of(waits).0);
        let now = Instant::now();
        now.checked_add(skipped).unwrap_or(now)
    }
}

/// `now` moved on by every wait a scope skipped; saturating, never panicking, after a
/// recorded wait near `Duration::MAX` (about thirty years on, tokio's own far future).
pub(crate) fn after_skipped(now: Instant) -> Instant {
    now.checked_add(skipped())
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}

/// `deadline`, on the scope's clock, as an instant on tokio's: less every wait skipped so far.
pub(crate) fn before_skipped(deadline: Instant) -> Instant {
    // Past the earliest instant there is: due now.
    deadline.checked_sub(skipped()).unwrap_or_else(Instant::now)
}

/// The scope's own `T` for the shared thing at `key` (an upstream's address), made fresh at
/// its first use there; `None` outside a scope. Each is kept for the process's life: a waiter
/// holds `'static` references to it, and a test process is short (an upstream's is a few
/// hundred bytes).
#[inline]
pub(crate) fn kept<T: Any + Default + Send + Sync>(key: usize) -> Option<&'static T> {
    SCOPE
        .try_with(|state| {
            let mut kept = state.kept.lock().unwrap_or_else(|e| e.into_inner());
            let found = kept
                .iter()
                .filter(|(at, _)| *at == key)
                .find_map(|(_, held)| held.downcast_ref::<T>());
            if let Some(found) = found {
                return found;
            }
            let made: &'static T = Box::leak(Box::default());
            kept.push((key, made));
            made
        })
        .ok()
}

/// The scope's fixed draw, if a scope is active.
pub(crate) fn draw() -> Option<Draw> {
    SCOPE.try_with(|state| state.draw).ok()
}
