//! Which upstream the attempt being polled goes to: [`Upstream::current`], set by a call
//! across an ordered set of upstreams around each poll of its attempt, so that a `#[retry]`
//! function keeps its signature and still builds its request for that model or host.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::Upstream;

thread_local! {
    /// The upstream of the attempt being polled on this thread, if it has one.
    static CURRENT: Cell<Option<&'static Upstream>> = const { Cell::new(None) };
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
        CURRENT.get()
    }
}

/// Run `f` with `upstream` as [`Upstream::current`]: a stream's open, made for the upstream
/// its route chose.
#[cfg_attr(not(feature = "stream"), allow(dead_code))]
pub(crate) fn on<T>(upstream: &'static Upstream, f: impl FnOnce() -> T) -> T {
    let previous = CURRENT.replace(Some(upstream));
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
        #[pin]
        future: F,
    }
}

impl<F> OnUpstream<F> {
    /// `future`, an attempt on `upstream`.
    #[inline]
    pub fn new(upstream: &'static Upstream, future: F) -> OnUpstream<F> {
        OnUpstream { upstream, future }
    }
}

impl<F: Future> Future for OnUpstream<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        struct Restore(Option<&'static Upstream>);
        impl Drop for Restore {
            #[inline(always)]
            fn drop(&mut self) {
                CURRENT.set(self.0);
            }
        }
        let this = self.project();
        // Restored on the way out, a panic included: a nested call across another set sees
        // its own, and its caller its own again after.
        let _restore = Restore(CURRENT.replace(Some(*this.upstream)));
        this.future.poll(cx)
    }
}
