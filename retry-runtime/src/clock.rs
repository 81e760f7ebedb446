//! Time, sleep and the jitter source, injectable: [`Clock`] and the default [`TokioClock`].

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::time::Instant;

use crate::ladder::Draw;
use crate::testing;

/// A boxed wait: allocated only when a retry actually waits, so the annotated function's
/// future stays small on the path that never retries.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Where the engine reads time, sleeps, and draws jitter.
///
/// The engine never calls these on a first-try success outside a turn or a literal budget,
/// so the hot path pays nothing for them.
///
/// ```
/// use retry_runtime::{Clock, Draw, Policy, Retry, Sleep};
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// /// Waits nothing and always draws the middle of the jitter range.
/// #[derive(Clone, Copy)]
/// struct Impatient;
///
/// impl Clock for Impatient {
///     fn now(&self) -> Instant { Instant::now() }
///     fn sleep(&self, _wait: Duration) -> Sleep { Box::pin(async {}) }
///     fn draw(&self) -> Draw { Draw::from_unit(0.5) }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let gave_up = Retry::new(&Policy::TRANSIENT)
///     .with_clock(Impatient)
///     .run(async |_| Err::<(), _>(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)))
///     .await
///     .unwrap_err();
/// assert_eq!(gave_up.attempts(), 5);
/// # }
/// ```
pub trait Clock {
    /// The current instant.
    fn now(&self) -> Instant;
    /// A future that completes after `wait`.
    fn sleep(&self, wait: Duration) -> Sleep;
    /// One random draw for one wait.
    fn draw(&self) -> Draw;
}

/// The default clock: tokio's time (so `tokio::time::pause` works) and a thread-local RNG.
///
/// Inside a [`testing::scope`] it records waits instead of sleeping and
/// draws the scope's fixed jitter, so tests of annotated functions never sleep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now() + testing::skipped()
    }

    fn sleep(&self, wait: Duration) -> Sleep {
        if testing::record(wait) {
            // An empty async block is zero-sized: boxing it does not allocate.
            Box::pin(async {})
        } else {
            Box::pin(tokio::time::sleep(wait))
        }
    }

    fn draw(&self) -> Draw {
        // The RNG is used and released here, never held across an `.await`.
        testing::draw().unwrap_or_else(|| Draw::from_bits(rand::random()))
    }
}
