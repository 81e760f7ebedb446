//! [`OpenAttempt`]: what opens one attempt of a [`RetryStream`](super::RetryStream), named so
//! that the stream's type follows from its functions.

use std::fmt;

use futures_core::TryFuture;

use crate::upstream::{Upstream, UpstreamRef};

/// A function that opens one attempt of a [`RetryStream`](super::RetryStream): `open`, called
/// with the attempt's number (from 1), or `reopen`, called with the
/// [`ResumeFrom`](super::ResumeFrom) cursor. Every `FnMut(A) -> Fut` whose `Fut` is a
/// [`TryFuture`] is one; the trait exists so that the stream's future types follow from these
/// functions' types, and a stream is named by its functions alone.
///
/// ```
/// use retry_runtime::{Class, OpenAttempt, testing};
/// use std::future::Ready;
///
/// type Items = testing::StreamOf<Result<u32, Class>>;
///
/// fn open(attempt: u32) -> Ready<Result<Items, Class>> {
///     std::future::ready(Ok(testing::stream_of(vec![Ok(attempt)])))
/// }
///
/// // A plain function opens an attempt; so does any closure of that shape.
/// fn opens<O: OpenAttempt<u32>>(_: &O) {}
/// opens(&(open as fn(u32) -> Ready<Result<Items, Class>>));
/// ```
pub trait OpenAttempt<A> {
    /// The future it returns: the attempt's stream, or the attempt's failure.
    type Future: TryFuture;

    /// Open the attempt.
    fn open_attempt(&mut self, with: A) -> Self::Future;
}

impl<F, A, Fut> OpenAttempt<A> for F
where
    F: FnMut(A) -> Fut,
    Fut: TryFuture,
{
    type Future = Fut;

    #[inline]
    fn open_attempt(&mut self, with: A) -> Fut {
        self(with)
    }
}

/// A stream's `open` across an ordered set of upstreams: given the upstream each attempt goes
/// to, as [`Retry::stream`](crate::Retry::stream) takes it across a set.
pub struct OpenOnUpstream<F> {
    open: F,
    /// The set's first: only a call outside the stream's route would see it.
    first: &'static Upstream,
}

impl<F> OpenOnUpstream<F> {
    pub(crate) fn new(open: F, first: &'static Upstream) -> Self {
        OpenOnUpstream { open, first }
    }
}

impl<F> fmt::Debug for OpenOnUpstream<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenOnUpstream").finish_non_exhaustive()
    }
}

impl<F, Fut> OpenAttempt<u32> for OpenOnUpstream<F>
where
    F: FnMut(UpstreamRef) -> Fut,
    Fut: TryFuture,
{
    type Future = Fut;

    #[inline]
    fn open_attempt(&mut self, _: u32) -> Fut {
        // The stream opens it with its route's upstream as the current one.
        (self.open)(UpstreamRef::new(Upstream::current().unwrap_or(self.first)))
    }
}
