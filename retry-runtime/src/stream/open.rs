//! [`OpenAttempt`]: what opens one attempt of a [`RetryStream`](super::RetryStream), named so
//! that the stream's type follows from its functions.

use futures_core::TryFuture;

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
