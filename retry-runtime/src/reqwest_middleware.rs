//! [`RetryMiddleware`]: the engine as a `reqwest_middleware::Middleware` (feature
//! `reqwest-middleware`), for clients built on a `reqwest_middleware::ClientWithMiddleware`.

use std::sync::{Mutex, PoisonError};

use reqwest_middleware::{Middleware, Next};

use crate::clock::Clock;
use crate::engine::Retry;
use crate::http::{AsTransport, ClassifyError, ResendCount, UpstreamFor};
use crate::layer::{self, Core, FnSender};
use crate::op::OpName;
use crate::policy::Policy;
use crate::quota::Quota;
use crate::route::NoUpstream;
use crate::upstream::{Upstream, UpstreamPaused};

/// A `reqwest_middleware::Middleware` that retries the rest of the chain on the engine: built
/// from a [`Retry`], so the policy, the name in notices, the budget and the quota are the
/// attribute's, and the enclosing [`Turn`](crate::Turn),
/// [`testing::scope`](crate::testing::scope) and the nesting rule apply.
///
/// A failed response is classified by [the one table](crate::http) from its status, its
/// headers and at most 4 KiB of its body, which is read once and handed back intact (see
/// [`Reply`](crate::http::Reply)). An error with no response is `Transport`, unless
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
/// and its failure ends the ladder with
/// [`StopReason::NotResendable`](crate::StopReason::NotResendable) (unless it stops the
/// ladder anyway, as an answer does), the response or error handed back as it is.
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
pub struct RetryMiddleware<R = Retry, K = AsTransport, U = NoUpstream> {
    core: Core<R, K, U>,
}

impl<C, P, N, Q> RetryMiddleware<Retry<C, P, N, Q>> {
    /// Retry each request as `retry` says.
    pub const fn new(retry: Retry<C, P, N, Q>) -> Self {
        RetryMiddleware {
            core: Core::new(retry),
        }
    }
}

impl<R, K, U> RetryMiddleware<R, K, U> {
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
    pub fn classify_errors<L>(self, errors: L) -> RetryMiddleware<R, L, U> {
        RetryMiddleware {
            core: self.core.classify_errors(errors),
        }
    }

    /// Share what `upstream` says across every call through the middleware: a provider's
    /// pause and the outage gate (see [`Upstream`]). An attempt the upstream holds back past a
    /// call's end is a `reqwest_middleware::Error::Middleware` holding the
    /// [`UpstreamPaused`], which classifies as the pause.
    ///
    /// ```
    /// use retry_runtime::reqwest_middleware::RetryMiddleware;
    /// use retry_runtime::{Policy, Retry, Upstream};
    ///
    /// static MODEL: Upstream = Upstream::new("model");
    /// let middleware = RetryMiddleware::new(Retry::new(&Policy::AVAILABILITY)).upstream(&MODEL);
    /// # let _ = middleware;
    /// ```
    pub fn upstream(self, upstream: &'static Upstream) -> RetryMiddleware<R, K, &'static Upstream> {
        self.upstream_by(upstream)
    }

    /// Like [`upstream`](Self::upstream), the upstream chosen for each request by `choose`
    /// (a `Fn(&reqwest::Request) -> Option<&'static Upstream>`, such as by host), or any
    /// [`UpstreamFor`].
    pub fn upstream_by<V>(self, choose: V) -> RetryMiddleware<R, K, V> {
        RetryMiddleware {
            core: self.core.upstream(choose),
        }
    }

    /// Send each call across `set`, an ordered set of upstreams (see
    /// [`Upstreams`](crate::Upstreams)): each attempt's request is rewritten by `rewrite` for
    /// the upstream it goes to (its host, its path); a failure another upstream may not share
    /// moves the call to the next at once. `rewrite` is a function or a closure that holds its
    /// configuration (each upstream's base URL), shared by every call through the middleware.
    ///
    /// ```
    /// use retry_runtime::reqwest_middleware::RetryMiddleware;
    /// use retry_runtime::{Policy, Retry, Upstream, Upstreams};
    /// use std::collections::HashMap;
    ///
    /// static PRIMARY: Upstream = Upstream::new("primary");
    /// static SECONDARY: Upstream = Upstream::new("secondary");
    /// static MODELS: Upstreams = Upstreams::new(&[&PRIMARY, &SECONDARY]);
    ///
    /// // Each upstream's base URL, from the service's configuration.
    /// let bases: HashMap<&str, reqwest::Url> = HashMap::from([
    ///     ("primary", "https://api.primary.example/".parse().unwrap()),
    ///     ("secondary", "https://api.secondary.example/".parse().unwrap()),
    /// ]);
    /// let to_base = move |request: &mut reqwest::Request, to: &'static Upstream| {
    ///     let url = bases[to.name()].join(request.url().path()).expect("a path joins a base");
    ///     *request.url_mut() = url;
    /// };
    /// let middleware = RetryMiddleware::new(Retry::new(&Policy::AVAILABILITY)).across(&MODELS, to_base);
    /// # let _ = middleware;
    /// ```
    pub fn across(
        self,
        set: &'static crate::Upstreams,
        rewrite: impl Fn(&mut reqwest::Request, &'static Upstream) + Send + Sync + 'static,
    ) -> RetryMiddleware<R, K, crate::http::Across<reqwest::Request, reqwest_middleware::Error>>
    {
        let hold = |paused| reqwest_middleware::Error::from(paused);
        self.upstream_by(crate::http::Across::new(set, rewrite, hold))
    }

    layer::builders!();
}

#[async_trait::async_trait]
impl<C, P, N, Q, K, U> Middleware for RetryMiddleware<Retry<C, P, N, Q>, K, U>
where
    P: AsRef<Policy> + Clone + Send + Sync + 'static,
    N: OpName + Clone + Send + Sync + 'static,
    Q: AsRef<Quota> + Clone + Send + Sync + 'static,
    U: UpstreamFor<reqwest::Request, reqwest_middleware::Error> + Clone + Send + Sync + 'static,
    C: Clock + Clone + Send + Sync + 'static,
    K: ClassifyError<reqwest_middleware::Error> + Send + Sync + 'static,
{
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        // Each attempt hands the extensions on to the rest of the chain, and takes back what
        // it left in them.
        let shared = Mutex::new(std::mem::take(extensions));
        let shared = &shared;
        let send = move |request: reqwest::Request, resend: Option<ResendCount>| {
            let next = next.clone();
            async move {
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
            }
        };
        let outcome = self
            .core
            .by_ref()
            .send(
                request,
                FnSender {
                    copy: reqwest::Request::try_clone,
                    send,
                    // An OpenAI or Anthropic JSON body says what the call costs in tokens.
                    tokens: |request: &reqwest::Request| {
                        let body = request.body().and_then(reqwest::Body::as_bytes);
                        let tokens = body.and_then(crate::http::tokens_of).unwrap_or(0);
                        u32::try_from(tokens).unwrap_or(u32::MAX)
                    },
                },
            )
            .await;
        *extensions = std::mem::take(&mut *shared.lock().unwrap_or_else(PoisonError::into_inner));
        // The count was each attempt's, not the caller's.
        extensions.remove::<ResendCount>();
        outcome
    }
}

/// A middleware's error can hold an attempt its upstream held back: as its `Middleware` case.
impl From<UpstreamPaused> for reqwest_middleware::Error {
    fn from(paused: UpstreamPaused) -> Self {
        reqwest_middleware::Error::middleware(paused)
    }
}
