//! Time, sleep and the jitter source, injectable: [`Clock`] and the default [`TokioClock`].

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use crate::draw::Draw;

#[cfg(feature = "test-util")]
use crate::test_scope;

/// A boxed wait, for a [`Clock`] whose sleep is simplest to write as an `async` block:
/// `type Sleep = retry_runtime::BoxSleep;` and `Box::pin(async move { ... })`. Named apart
/// from tokio's `Sleep`, which a clock's own sleep often wraps.
pub type BoxSleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Where the engine reads time, sleeps, and draws jitter.
///
/// The engine never calls these on a first-try success outside a turn or a literal budget,
/// so the hot path pays nothing for them. Its sleep is a type of its own, not a box: the
/// default clock's wait is held in place in the call's future, and a retry allocates nothing.
///
/// ```
/// use retry_runtime::{Clock, Draw, Policy, Retry};
/// use std::future::{ready, Ready};
/// use std::time::Duration;
/// use tokio::time::Instant;
///
/// /// Waits nothing and always draws the middle of the jitter range.
/// #[derive(Clone, Copy)]
/// struct Impatient;
///
/// impl Clock for Impatient {
///     type Sleep = Ready<()>;
///     fn now(&self) -> Instant { Instant::now() }
///     fn sleep(&self, _wait: Duration) -> Ready<()> { ready(()) }
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
    /// The future a wait is.
    type Sleep: Future<Output = ()> + Send;
    /// The current instant.
    fn now(&self) -> Instant;
    /// A future that completes after `wait`.
    fn sleep(&self, wait: Duration) -> Self::Sleep;
    /// One random draw for one wait.
    fn draw(&self) -> Draw;
}

/// The default clock: tokio's time (so `tokio::time::pause` works) and a thread-local RNG.
///
/// With the `test-util` feature, inside a `testing::scope` it records waits instead of
/// sleeping and draws the scope's fixed jitter, so tests of annotated functions never sleep.
/// Without the feature it never looks for a scope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokioClock;

pin_project_lite::pin_project! {
    /// [`TokioClock`]'s wait: tokio's sleep, held in place in the call's future. With the
    /// `test-util` feature it may be nothing at all, when a testing scope recorded the wait
    /// instead; without it, it is tokio's sleep alone, with no room for that case.
    #[derive(Debug)]
    pub struct TokioSleep {
        #[pin]
        sleep: SleepOrRecorded,
    }
}

/// tokio's sleep, or (`None`) a wait a testing scope recorded.
#[cfg(feature = "test-util")]
type SleepOrRecorded = Option<tokio::time::Sleep>;
#[cfg(not(feature = "test-util"))]
type SleepOrRecorded = tokio::time::Sleep;

impl Future for TokioSleep {
    type Output = ();

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let sleep = self.project().sleep;
        #[cfg(feature = "test-util")]
        let Some(sleep) = sleep.as_pin_mut() else {
            return Poll::Ready(());
        };
        sleep.poll(cx)
    }
}

impl Clock for TokioClock {
    type Sleep = TokioSleep;

    fn now(&self) -> Instant {
        let now = Instant::now();
        #[cfg(feature = "test-util")]
        let now = test_scope::after_skipped(now);
        now
    }

    #[inline]
    fn sleep(&self, wait: Duration) -> TokioSleep {
        #[cfg(feature = "test-util")]
        let sleep = (!test_scope::record(wait)).then(|| tokio::time::sleep(wait));
        #[cfg(not(feature = "test-util"))]
        let sleep = tokio::time::sleep(wait);
        TokioSleep { sleep }
    }

    fn draw(&self) -> Draw {
        #[cfg(feature = "test-util")]
        if let Some(draw) = test_scope::draw() {
            return draw;
        }
        Draw::from_bits(jitter_bits())
    }
}

thread_local! {
    /// This thread's jitter generator: SplitMix64, seeded once from the OS-seeded thread RNG.
    /// Jitter needs spread, not secrecy, and a draw is then a few instructions, not a ChaCha
    /// block.
    static JITTER: Cell<u64> = Cell::new(rand::random());
}

/// 32 random bits for one wait's jitter.
fn jitter_bits() -> u32 {
    JITTER.with(|state| {
        let next = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        // The high half of the mix.
        ((z ^ (z >> 31)) >> 32) as u32
    })
}

/// `after` from `now`; a wait with no end (a hint of `Duration::MAX` under an uncapped
/// `max_pause`, a pacer's rate near zero) ends in about thirty years, tokio's own far future,
/// rather than overflow.
pub(crate) fn later(now: Instant, after: Duration) -> Instant {
    now.checked_add(after)
        .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30))
}
