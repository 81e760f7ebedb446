//! Which upstream the attempt being polled goes to: [`Upstream::current`], set by a call
//! across an ordered set of upstreams around each poll of its attempt, so that a `#[retry]`
//! function keeps its signature and still builds its request for that model or host.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::Upstream;
use crate::pace::RateSaid;

thread_local! {
    /// The upstream of the attempt being polled on this thread, if it has one.
    /// The upstream of the attempt being polled on this thread, if it has one, and its
    /// pacer's sends when the attempt began (handed back with the answer's headers).
    static CURRENT: Cell<Option<(&'static Upstream, u32)>> = const { Cell::new(None) };
}

impl Upstream {
    /// The upstream the attempt being run goes to, inside a call across an ordered set of
    /// upstreams ([`Upstreams`](crate::Upstreams)): `#[retry(across = ..)]`'s body, or the
    /// operation of [`Retry::across`](crate::Retry::across)'s run, and what they call. `None`
    /// elsewhere.
    ///
    /// ```
    /// use retry_runtime::{retry, Class, Upstream, Upstreams};
    ///
    /// static CLAUDE: Upstream = Upstream::new("claude");
    /// static GPT: Upstream = Upstream::new("gpt");
    /// static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);
    ///
    /// #[retry(policy = "availability", across = MODELS)]
    /// async fn ask() -> Result<&'static str, Class> {
    ///     let model = Upstream::current().map_or("none", Upstream::name);
    ///     if model == "claude" { Err(Class::Unavailable { retry_after: None }) } else { Ok(model) }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// assert_eq!(ask().await, Ok("gpt"));
    /// assert!(Upstream::current().is_none());
    /// # CLAUDE.reset();
    /// # }
    /// ```
    pub fn current() -> Option<&'static Upstream> {
        CURRENT.get().map(|(upstream, _)| upstream)
    }
}

impl Upstream {
    /// Tell the upstream's pacer what an answer said of its key: for a client whose answers
    /// the library does not read itself (`check_status` and the layers do). Inside the
    /// attempt the answer answers, what was sent since is counted out of it.
    ///
    /// ```
    /// use retry_runtime::{RateLeft, RateSaid, Upstream};
    /// use std::time::Duration;
    ///
    /// static MODEL: Upstream = Upstream::new("model");
    /// let left = RateLeft { limit: Some(10), remaining: 0, reset: Some(Duration::from_secs(1)) };
    /// MODEL.heard_limits(RateSaid { requests: Some(left), tokens: None });
    /// // Its calls are paced from now on: the next waits for the key's next slot.
    /// assert!(format!("{MODEL:?}").contains("paced: true"));
    /// # MODEL.reset();
    /// ```
    pub fn heard_limits(&'static self, said: RateSaid) {
        let seq = match CURRENT.get() {
            Some((upstream, seq)) if std::ptr::eq(upstream, self) => seq,
            _ => self.pace_sent(),
        };
        self.said(Some(said), seq);
    }
}

impl Upstream {
    /// How long an attempt of `tokens` would wait for the key now, as the upstream's pacer
    /// holds it (nothing reserved): zero where it would go at once or nothing paces it;
    /// `None` where it costs more than the key's whole limit and could never be sent.
    /// `backoff explain --upstream` says it of a response's headers.
    ///
    /// ```
    /// use retry_runtime::{RateLeft, RateSaid, Upstream};
    /// use std::time::Duration;
    ///
    /// static MODEL: Upstream = Upstream::new("model");
    /// assert_eq!(MODEL.pace_wait(0), Some(Duration::ZERO));
    /// let left = RateLeft { limit: Some(10), remaining: 0, reset: Some(Duration::from_secs(1)) };
    /// MODEL.heard_limits(RateSaid { requests: Some(left), tokens: None });
    /// let wait = MODEL.pace_wait(0).unwrap();
    /// assert!(wait > Duration::from_millis(90) && wait <= Duration::from_millis(100));
    /// # MODEL.reset();
    /// ```
    pub fn pace_wait(&self, tokens: u32) -> Option<Duration> {
        use crate::clock::{Clock, TokioClock};
        let now = TokioClock.now();
        match self.pacer().take(now, tokens, crate::pace::Ask::Peek) {
            crate::pace::Paces::Go => Some(Duration::ZERO),
            crate::pace::Paces::Wait(until) => Some(until.saturating_duration_since(now)),
            crate::pace::Paces::Never => None,
        }
    }
}

/// What an answer to the attempt being polled said of its key: told to its upstream's pacer,
/// if the attempt has an upstream. `said` is read only then.
#[cfg(feature = "reqwest")]
pub(crate) fn heard(said: impl FnOnce() -> Option<RateSaid>) {
    if let Some((upstream, seq)) = CURRENT.get() {
        upstream.said(said(), seq);
    }
}

/// Run `f` with `upstream` as [`Upstream::current`]: a stream's open, made for the upstream
/// its route chose.
#[cfg_attr(not(feature = "stream"), allow(dead_code))]
pub(crate) fn on<T>(upstream: &'static Upstream, f: impl FnOnce() -> T) -> T {
    let previous = CURRENT.replace(Some((upstream, upstream.pace_sent())));
    let made = f();
    CURRENT.set(previous);
    made
}

pin_project_lite::pin_project! {
    /// An attempt's future, polled with its upstream as [`Upstream::current`]. Used by
    /// `#[retry(across = ..)]`'s expansion, not public API.
    #[doc(hidden)]
    #[derive(Debug)]
    pub struct OnUpstream<F> {
        upstream: &'static Upstream,
        sent: u32,
        #[pin]
        future: F,
    }
}

impl<F> OnUpstream<F> {
    /// `future`, an attempt on `upstream`.
    #[inline]
    pub fn new(upstream: &'static Upstream, future: F) -> OnUpstream<F> {
        OnUpstream {
            upstream,
            sent: upstream.pace_sent(),
            future,
        }
    }
}

impl<F: Future> Future for OnUpstream<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        struct RestoreCurrent(Option<(&'static Upstream, u32)>);
        impl Drop for RestoreCurrent {
            #[inline(always)]
            fn drop(&mut self) {
                CURRENT.set(self.0);
            }
        }
        let this = self.project();
        // Restored on the way out, a panic included: a nested call across another set sees
        // its own, and its caller its own again after.
        let _restore = RestoreCurrent(CURRENT.replace(Some((*this.upstream, *this.sent))));
        this.future.poll(cx)
    }
}
