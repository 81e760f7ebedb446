//! The one core of the two HTTP layers, [`RetryLayer`](crate::tower::RetryLayer) and
//! [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware): what both are built with
//! ([`Core`], and its builders in [`builders!`]) and the ladder a call runs through them
//! ([`Core::send`]). A layer adds only how it sends one request.
//!
//! A call's request is copied for each attempt. One that cannot be copied for the first is
//! sent itself, once; one that cannot be copied for a later attempt ends the ladder with the
//! failure it has. Either way the stop is
//! [`StopReason::NotResendable`](crate::StopReason::NotResendable) (unless the failure
//! stops the ladder on its own: an answer, say), and the caller gets that failure, unchanged.

use std::fmt;
use std::future::Future;

use crate::class::{Class, Classify};
use crate::engine::{Run, Source};
use crate::http::{
    AsTransport, ClassifyError, Fault, HttpError, Refusal, Reply, ResendCount, StreamPeek,
};

/// What a layer is built with: the retry each call runs under, the class of the wrapped
/// service's own errors, and how a successful event stream is read before it is handed on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Core<R, K> {
    pub(crate) retry: R,
    pub(crate) errors: K,
    pub(crate) peek: StreamPeek,
}

impl<R> Core<R, AsTransport> {
    /// Every service error `Transport`, streams read to their commit point.
    pub(crate) const fn new(retry: R) -> Self {
        Core {
            retry,
            errors: AsTransport,
            peek: StreamPeek::DEFAULT,
        }
    }
}

impl<R, K> Core<R, K> {
    /// The same, the service's errors classified by `errors`.
    pub(crate) fn classify_errors<L>(self, errors: L) -> Core<R, L> {
        Core {
            retry: self.retry,
            errors,
            peek: self.peek,
        }
    }

    /// A core for one call that borrows this one's classification: for a layer whose `K` is
    /// not `Clone`.
    #[cfg(feature = "reqwest-middleware")]
    pub(crate) fn by_ref<E>(&self) -> Core<R, impl Fn(&E) -> Class + '_>
    where
        R: Clone,
        K: ClassifyError<E>,
    {
        let errors = &self.errors;
        Core {
            retry: self.retry.clone(),
            errors: move |error: &E| errors.classify_error(error),
            peek: self.peek,
        }
    }
}

impl<R: Source, K> Core<R, K> {
    /// Send `request` under the ladder: each attempt sends what `copy` makes of it (or, if it
    /// makes nothing at first, the request itself, once) with `send`, which is told the
    /// attempt's [`ResendCount`] to mark it with. The response is read as [`Reply`] and the
    /// stream rule say, a service error classified by `K`. When the ladder stops, the last
    /// response or error, unchanged.
    ///
    /// The future holds no borrow of its parts across an `.await`, so it is `Send` when they
    /// are, `Sync` or not.
    pub(crate) async fn send<Rq, Rs, E, Fut>(
        self,
        request: Rq,
        mut copy: impl FnMut(&Rq) -> Option<Rq>,
        mut send: impl FnMut(Rq, Option<ResendCount>) -> Fut,
    ) -> Result<Rs, E>
    where
        K: ClassifyError<E>,
        Rs: Reply,
        E: fmt::Display,
        Fut: Future<Output = Result<Rs, E>>,
    {
        let Core {
            retry,
            errors,
            peek,
        } = self;
        let (mut next, template) = match copy(&request) {
            Some(first) => (first, Some(request)),
            // Nothing to copy the next attempt from: this one is the last.
            None => (request, None),
        };
        let mut run = Run::new(retry);
        loop {
            let resend = ResendCount::of_attempt(run.attempts() + 1);
            let attempted = run.attempt(attempt(send(next, resend), resend, peek)).await;
            let failed = match run.attempted(attempted) {
                Ok(Ok(response)) => {
                    run.succeeded();
                    return Ok(response);
                }
                Ok(Err((response, refusal))) => Failed::refused(response, refusal),
                Err(error) => {
                    let class = errors.classify_error(&error);
                    Failed::Service(error, class)
                }
            };
            // The next attempt's copy, made before the ladder decides: without one, it cannot
            // retry, whatever it would decide.
            next = match template.as_ref().and_then(&mut copy) {
                Some(copy) => copy,
                None => {
                    return run
                        .gave_up_not_resendable(failed)
                        .into_error()
                        .into_result();
                }
            };
            if let Err(gave_up) = run.failed(failed).await {
                return gave_up.into_error().into_result();
            }
        }
    }
}

/// One attempt: its resend count on its span, the request `sent`, and the response read as
/// the table and the stream rule say; or the service's own error.
async fn attempt<Rs: Reply, E>(
    sent: impl Future<Output = Result<Rs, E>>,
    resend: Option<ResendCount>,
    peek: StreamPeek,
) -> Result<Result<Rs, (Rs, Refusal)>, E> {
    if let Some(count) = resend {
        count.record();
    }
    Ok(sent.await?.inspect_stream(peek).await)
}

/// One attempt's failure: a response that classified as a failure (kept whole, to hand back
/// when the ladder stops), or the service's own error with its class.
enum Failed<R, E> {
    Answered(R, HttpError),
    Broken(R, Fault),
    Service(E, Class),
}

impl<R, E> Failed<R, E> {
    /// What the caller gets when the ladder stops: the last response or error, unchanged.
    fn into_result(self) -> Result<R, E> {
        match self {
            Failed::Answered(response, _) | Failed::Broken(response, _) => Ok(response),
            Failed::Service(error, _) => Err(error),
        }
    }

    /// A response refused by the table or broken in its stream.
    fn refused(response: R, refusal: Refusal) -> Self {
        match refusal {
            Refusal::Answered(error) => Failed::Answered(response, error),
            Refusal::Broken(fault) => Failed::Broken(response, fault),
        }
    }
}

impl<R, E> Classify for Failed<R, E> {
    fn classify(&self) -> Class {
        match self {
            Failed::Answered(_, error) => error.classify(),
            Failed::Broken(_, fault) => fault.class(),
            Failed::Service(_, class) => *class,
        }
    }
}

impl<R, E: fmt::Display> fmt::Display for Failed<R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failed::Answered(_, error) => error.fmt(f),
            Failed::Broken(_, fault) => fault.fmt(f),
            Failed::Service(error, _) => error.fmt(f),
        }
    }
}

/// The builder methods both layers share, their docs included, written once: each layer
/// expands it in its `impl<R, ..>` block, over its `core` field.
macro_rules! builders {
    () => {
        /// Whether a successful `text/event-stream` response (a `reqwest::Response`, with
        /// feature `sse`) is read up to its commit point, its first content, before it is
        /// handed on: on by default. Before that point an error event, a cut, an early end or
        /// a stall past [`commit_timeout`](Self::commit_timeout) is retried by this ladder; at
        /// it, the client gets the bytes read, unchanged, then the rest as it arrives; after
        /// it, the layer never touches the stream. `false` keeps the head-only behaviour: a
        /// `200` passes untouched.
        pub const fn streams(mut self, on: bool) -> Self {
            self.core.peek.on = on;
            self
        }

        /// Bound the time from sending a request to its stream's commit point (the client's
        /// time to first byte): a stream with no content by then is dropped and retried as a
        /// `Timeout`, which the policy decides on (`availability` does not retry one). Bounded
        /// by the turn too.
        pub const fn commit_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.core.peek.commit_timeout = Some(timeout);
            self
        }

        /// The retry each call runs under.
        pub const fn retry(&self) -> &R {
            &self.core.retry
        }
    };
}

pub(crate) use builders;
