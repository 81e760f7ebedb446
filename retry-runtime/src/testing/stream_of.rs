//! Scripted streams from memory, for tests of `Retry::stream` (feature `stream`): each
//! item ready at once. It must not touch a socket or a clock.

use std::pin::pin;

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
pub fn stream_of<T>(items: Vec<T>) -> StreamOf<T> {
    StreamOf {
        items: items.into_iter(),
    }
}

/// The stream [`stream_of`] returns.
#[derive(Debug)]
pub struct StreamOf<T> {
    items: std::vec::IntoIter<T>,
}

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

impl<T> Unpin for StreamOf<T> {}

/// Every item of `stream`, in order, until it ends (feature `stream`).
pub async fn collect<S: futures_core::Stream>(stream: S) -> Vec<S::Item> {
    let mut stream = pin!(stream);
    let mut items = Vec::new();
    while let Some(item) = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
        items.push(item);
    }
    items
}

/// The test streams carry no cursor of their own.
impl<T> crate::stream::Resumable for StreamOf<T> {}
