//! For the module's tests: a source of chunks held in memory that counts what is pulled, and
//! a way to drain a stream without a runtime (every source here is always ready).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_core::Stream;

/// Chunks handed out one per poll, then the end (or an endless chunk, if `forever`).
pub(crate) struct Chunks {
    chunks: VecDeque<Result<Bytes, std::io::Error>>,
    forever: Option<Bytes>,
    pulled: Arc<AtomicUsize>,
}

impl Chunks {
    pub(crate) fn new<I, B>(chunks: I) -> Chunks
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        Chunks {
            chunks: chunks
                .into_iter()
                .map(|chunk| Ok(Bytes::copy_from_slice(chunk.as_ref())))
                .collect(),
            forever: None,
            pulled: Arc::default(),
        }
    }

    /// These chunks, then `chunk` again and again.
    pub(crate) fn then_forever(mut self, chunk: &[u8]) -> Chunks {
        self.forever = Some(Bytes::copy_from_slice(chunk));
        self
    }

    /// These chunks, then the connection fails.
    pub(crate) fn then_cut(mut self) -> Chunks {
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        self.chunks.push_back(Err(reset));
        self
    }

    /// The bytes pulled from this source so far.
    pub(crate) fn pulled(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.pulled)
    }
}

impl Stream for Chunks {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self
            .chunks
            .pop_front()
            .or_else(|| self.forever.clone().map(Ok));
        if let Some(Ok(chunk)) = &next {
            self.pulled.fetch_add(chunk.len(), Ordering::Relaxed);
        }
        Poll::Ready(next)
    }
}

/// Every item, to the stream's end.
pub(crate) fn drain<S: Stream + Unpin>(stream: &mut S) -> Vec<S::Item> {
    std::iter::from_fn(|| next(stream)).collect()
}

/// The next item of a stream that is always ready.
pub(crate) fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    match Pin::new(stream).poll_next(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(item) => item,
        Poll::Pending => panic!("a source in memory is always ready"),
    }
}
