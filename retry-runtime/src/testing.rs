//! A scope for tests: waits are recorded, not slept, and jitter is fixed (feature
//! `test-util`, as tokio's test machinery is: with it off, the default clock never looks for
//! a scope).
//!
//! ```
//! use retry_runtime::{testing, Class, Policy, Retry};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let (result, waits) = testing::scope(async {
//!     Retry::new(&Policy::AVAILABILITY)
//!         .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }))
//!         .await
//! })
//! .await;
//! assert_eq!(result.unwrap_err().attempts(), 4);
//! assert_eq!(waits.waits(), [250, 500, 1000].map(Duration::from_millis));
//! # }
//! ```
//!
//! Against a real server (the README's "Testing code that retries"):
//!
#![doc = concat!("```\n", include_str!("../doc/testing_example.rs"), "```")]

use std::future::Future;
use std::pin::pin;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::draw::Draw;

tokio::task_local! {
    static SCOPE: State;
}

#[derive(Debug)]
struct State {
    draw: Draw,
    waits: Mutex<Vec<Duration>>,
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
    let state = State {
        draw,
        waits: Mutex::new(Vec::new()),
    };
    let mut scoped = pin!(SCOPE.scope(state, future));
    let output = scoped.as_mut().await;
    let waits = scoped
        .as_mut()
        .take_value()
        .map(|state| state.waits.into_inner().unwrap_or_else(|e| e.into_inner()))
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
        .try_with(|state| {
            let waits = state.waits.lock().unwrap_or_else(|e| e.into_inner());
            waits
                .iter()
                .fold(Duration::ZERO, |sum, wait| sum.saturating_add(*wait))
        })
        .unwrap_or(Duration::ZERO)
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

/// The scope's fixed draw, if a scope is active.
pub(crate) fn draw() -> Option<Draw> {
    SCOPE.try_with(|state| state.draw).ok()
}

/// A stream of `items`, each ready at once, in order: a scripted stream for tests of
/// [`Retry::stream`](crate::Retry::stream) (feature `stream`).
///
/// ```
/// use retry_runtime::testing;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let items = testing::collect(testing::stream_of(vec![Ok::<_, ()>(1), Err(()), Ok(2)])).await;
/// assert_eq!(items, [Ok(1), Err(()), Ok(2)]);
/// # }
/// ```
#[cfg(feature = "stream")]
#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
pub fn stream_of<T>(items: Vec<T>) -> StreamOf<T> {
    StreamOf {
        items: items.into_iter(),
    }
}

/// The stream [`stream_of`] returns.
#[cfg(feature = "stream")]
#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
#[derive(Debug)]
pub struct StreamOf<T> {
    items: std::vec::IntoIter<T>,
}

#[cfg(feature = "stream")]
impl<T> futures_core::Stream for StreamOf<T> {
    type Item = T;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        // Every field is `Unpin`.
        std::task::Poll::Ready(self.get_mut().items.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

#[cfg(feature = "stream")]
impl<T> Unpin for StreamOf<T> {}

/// Every item of `stream`, in order, until it ends (feature `stream`).
#[cfg(feature = "stream")]
#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
pub async fn collect<S: futures_core::Stream>(stream: S) -> Vec<S::Item> {
    let mut stream = pin!(stream);
    let mut items = Vec::new();
    while let Some(item) = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
        items.push(item);
    }
    items
}
