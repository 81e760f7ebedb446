//! [`RetryMiddleware`]: the engine as a `reqwest_middleware::Middleware` (feature
//! `reqwest-middleware`), for clients built on a `reqwest_middleware::ClientWithMiddleware`.

use std::sync::{Mutex, PoisonError};

use reqwest_middleware::{Middleware, Next};

use crate::class::Class;
use crate::clock::Clock;
use crate::engine::Retry;
use crate::http::{AsTransport, ClassifyError, Failed, Reply, ResendCount, StreamPeek};
use crate::policy::Policy;
use crate::quota::Quota;
use crate::turn::scope::OpName;

/// A `reqwest_middleware::Middleware` that retries the rest of the chain on the engine: built
/// from a [`Retry`], so the policy, the name in notices, the budget and the quota are the
/// attribute's, and the enclosing [`Turn`](crate::Turn),
/// [`testing::scope`](crate::testing::scope) and the nesting rule apply.
///
/// A failed response is classified by [the one table](crate::http) from its status, its
/// headers and at most 4 KiB of its body, which is read once and handed back intact (see
/// [`Reply`]). An error with no response is `Transport`, unless
/// [`classify_errors`](Self::classify_errors) says otherwise. When the ladder stops, the
/// caller gets the last response or error unchanged.
///
/// A successful `text/event-stream` response is read up to its commit point, its first
/// content (at most 64 KiB or 64 events), before it is handed on: an error event, a cut, an
/// early end or a stall past [`commit_timeout`](Self::commit_timeout) before it is retried,
/// and the client then gets the bytes read, unchanged, and the rest of the stream untouched.
/// [`streams(false)`](Self::streams) turns that off.
///
/// A request whose body cannot be cloned (a stream) cannot be sent twice: it is sent once,
/// outside the ladder, and its answer handed back as it is.
///
/// ```
/// use reqwest_middleware::ClientBuilder;
/// use retry_runtime::reqwest_middleware::RetryMiddleware;
/// use retry_runtime::{Policy, Retry};
///
/// let client = ClientBuilder::new(reqwest::Client::new())
///     .with(RetryMiddleware::new(Retry::new(&Policy::AVAILABILITY).named("model")))
///     .build();
/// # let _ = client;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryMiddleware<R = Retry, K = AsTransport> {
    retry: R,
    errors: K,
    peek: StreamPeek,
}

impl<C, P, N, U> RetryMiddleware<Retry<C, P, N, U>> {
    /// Retry each request as `retry` says.
    pub const fn new(retry: Retry<C, P, N, U>) -> Self {
        RetryMiddleware {
            retry,
            errors: AsTransport,
            peek: StreamPeek::DEFAULT,
        }
    }
}

impl<R, K> RetryMiddleware<R, K> {
    /// Classify errors with no response with `errors`, a closure
    /// `Fn(&reqwest_middleware::Error) -> Class` or any [`ClassifyError`], instead of calling
    /// them all `Transport`. The crate's own classification of a `reqwest::Error` is one line
    /// away:
    ///
    /// ```
    /// use retry_runtime::reqwest_middleware::RetryMiddleware;
    /// use retry_runtime::{Class, Classify, Policy, Retry};
    ///
    /// let middleware = RetryMiddleware::new(Retry::new(&Policy::AVAILABILITY)).classify_errors(
    ///     |error: &reqwest_middleware::Error| match error {
    ///         reqwest_middleware::Error::Reqwest(error) => error.classify(),
    ///         _ => Class::Transport,
    ///     },
    /// );
    /// # let _ = middleware;
    /// ```
    pub fn classify_errors<L>(self, errors: L) -> RetryMiddleware<R, L> {
        RetryMiddleware {
            retry: self.retry,
            errors,
            peek: self.peek,
        }
    }

    /// Whether a successful `text/event-stream` response (a `reqwest::Response`, with feature
    /// `sse`) is read up to its commit point, its first content, before it is handed on: on
    /// by default. Before that point an error event, a cut, an early end or a stall past
    /// [`commit_timeout`](Self::commit_timeout) is retried by this ladder; at it, the client
    /// gets the bytes read, unchanged, then the rest as it arrives; after it, the layer never
    /// touches the stream. `false` keeps the head-only behaviour: a `200` passes untouched.
    pub const fn streams(mut self, on: bool) -> Self {
        self.peek.on = on;
        self
    }

    /// Bound the time from sending a request to its stream's commit point (the client's time
    /// to first byte): a stream with no content by then is dropped and retried as a
    /// `Timeout`, which the policy decides on (`availability` does not retry one). Bounded by
    /// the turn too.
    pub const fn commit_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.peek.commit_timeout = Some(timeout);
        self
    }

    /// The retry each request runs under.
    pub const fn retry(&self) -> &R {
        &self.retry
    }
}

/// A request that cloned once and then did not: it cannot be sent again.
#[derive(Debug)]
struct NotCloneable;

impl std::fmt::Display for NotCloneable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request's body could not be cloned for another attempt")
    }
}

impl std::error::Error for NotCloneable {}

#[async_trait::async_trait]
impl<C, P, N, U, K> Middleware for RetryMiddleware<Retry<C, P, N, U>, K>
where
    P: AsRef<Policy> + Clone + Send + Sync + 'static,
    N: OpName + Clone + Send + Sync + 'static,
    U: AsRef<Quota> + Clone + Send + Sync + 'static,
    C: Clock + Clone + Send + Sync + 'static,
    K: ClassifyError<reqwest_middleware::Error> + Send + Sync + 'static,
{
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        if request.try_clone().is_none() {
            // A streamed body: one try, as it is.
            return next.run(request, extensions).await;
        }
        // Each attempt hands the extensions on to the rest of the chain, and takes back what
        // it left in them.
        let shared = Mutex::new(std::mem::take(extensions));
        let shared = &shared;
        let errors = &self.errors;
        let peek = self.peek;
        let outcome = self
            .retry
            .clone()
            .run_fn(move |attempt| {
                let request = request.try_clone();
                let next = next.clone();
                let resend = ResendCount::of_attempt(attempt);
                async move {
                    if let Some(count) = resend {
                        count.record();
                    }
                    let failed = |error: reqwest_middleware::Error| {
                        let class = errors.classify_error(&error);
                        Failed::Service(error, class)
                    };
                    let Some(request) = request else {
                        let error = reqwest_middleware::Error::middleware(NotCloneable);
                        return Err(Failed::Service(error, Class::Definitive));
                    };
                    let mut extensions =
                        std::mem::take(&mut *shared.lock().unwrap_or_else(PoisonError::into_inner));
                    // The chain's own middleware (reqwest-tracing's span) reads the count.
                    match resend {
                        Some(count) => extensions.insert(count),
                        None => extensions.remove::<ResendCount>(),
                    };
                    let answer = next.run(request, &mut extensions).await;
                    *shared.lock().unwrap_or_else(PoisonError::into_inner) = extensions;
                    answer
                        .map_err(failed)?
                        .inspect_stream(peek)
                        .await
                        .map_err(|(response, refusal)| Failed::refused(response, refusal))
                }
            })
            .await;
        *extensions = std::mem::take(&mut *shared.lock().unwrap_or_else(PoisonError::into_inner));
        // The count was each attempt's, not the caller's.
        extensions.remove::<ResendCount>();
        match outcome {
            Ok(response) => Ok(response),
            Err(gave_up) => gave_up.into_error().into_result(),
        }
    }
}
