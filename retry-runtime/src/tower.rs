//! [`RetryLayer`]: the engine as a tower layer (feature `tower`), for clients that take a tower
//! service and whose retries you do not own, such as async-openai's `with_http_service`.
//!
//! The async-openai recipe (features `tower` and `reqwest`, and async-openai's `middleware`):
//!
//! ```text
//! let client = async_openai::Client::with_config(config).with_http_service(
//!     tower::ServiceBuilder::new()
//!         .layer(retry_runtime::tower::RetryLayer::new(Retry::new(&Policy::AVAILABILITY).named("model")))
//!         .service(async_openai::middleware::ReqwestService::new(reqwest::Client::new())),
//! );
//! ```
//!
//! (compiled and run against a loopback server in the workspace's `retry-client-tests`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use crate::clock::Clock;
use crate::engine::{Clocked, Retry, Source};
use crate::http::{AsTransport, ClassifyError, Reply, ResendCount, UpstreamFor};
use crate::layer::{self, Calling, Core, Sender};
use crate::op::OpName;
use crate::policy::Policy;
use crate::quota::Quota;
use crate::route::NoUpstream;
use crate::upstream::Upstream;

/// A tower layer that retries the service it wraps on the engine: built from a [`Retry`], so
/// the policy, the name in notices, the budget and the quota are the attribute's, and the
/// enclosing [`Turn`](crate::Turn), [`testing::scope`](crate::testing::scope) and the
/// nesting rule apply.
///
/// Each attempt sends a copy of the request, made as [`CloneRequest`] says: by `clone()` by
/// default (async-openai's `HttpRequestFactory` is `Clone`: each attempt rebuilds the
/// request), rebuilt from its parts for an `http::Request<B>` with
/// [`http_requests`](Self::http_requests) (a hyper-util client, a tower-http stack), or by a
/// closure of yours. A request that cannot be copied is sent once, and one that cannot be
/// copied again ends the ladder: [`StopReason::NotResendable`](crate::StopReason::NotResendable)
/// unless its failure stops it anyway. The response is a `reqwest::Response` (feature
/// `reqwest`) or an `http::Response<B>`; see [`Reply`] for what each is classified from.
/// A failed response is classified by [the one table](crate::http); a service error (no
/// response at all) is `Transport`, unless [`classify_errors`](Self::classify_errors) says
/// otherwise. When the ladder stops, the caller gets the last response or error unchanged,
/// so the client reports it as it always does.
///
/// A successful `text/event-stream` `reqwest::Response` is read up to its commit point, its
/// first content (at most 64 KiB or 64 events), before it is handed on: an error event, a
/// cut, an early end or a stall past [`commit_timeout`](Self::commit_timeout) before it is
/// retried, and the client then gets the bytes read, unchanged, and the rest of the stream
/// untouched. [`streams(false)`](Self::streams) turns that off. An `http::Response<B>`'s
/// stream is never read: its body cannot be put back in general.
///
/// Turn the client's own retries off, or this layer multiplies them: four attempts of a
/// client that itself tries four times is sixteen requests. async-openai's
/// `with_http_service` replaces its built-in retry layer with the service it is given.
///
/// ```
/// use retry_runtime::tower::RetryLayer;
/// use retry_runtime::{testing, Policy, Retry};
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use tower::{Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let calls = Arc::new(AtomicU32::new(0));
/// let counted = Arc::clone(&calls);
/// let flaky = tower::service_fn(move |_request: &'static str| {
///     let status = if counted.fetch_add(1, Ordering::SeqCst) < 2 { 503 } else { 200 };
///     async move { Ok::<_, std::io::Error>(http::Response::builder().status(status).body("reply").unwrap()) }
/// });
/// let mut service = tower::ServiceBuilder::new()
///     .layer(RetryLayer::new(Retry::new(&Policy::AVAILABILITY).named("model")))
///     .service(flaky);
///
/// let (response, recorded) = testing::scope(service.ready().await.unwrap().call("prompt")).await;
/// assert_eq!(response.unwrap().status(), 200);
/// assert_eq!(calls.load(Ordering::SeqCst), 3);
/// assert_eq!(recorded.waits().len(), 2);
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryLayer<R = Retry, K = AsTransport, Cp = ByClone, U = NoUpstream> {
    core: Core<R, K, U>,
    requests: Cp,
}

/// How a [`RetryLayer`] makes each attempt's request from the caller's: a copy, or `None`
/// when it cannot be copied (the request itself is then sent once). tower's own
/// retry asks its policy the same (`Policy::clone_request`). A closure
/// `Fn(&Request) -> Option<Request>` is one.
///
/// Rust's coherence rules cannot choose the strategy from the request's type alone (an impl
/// for `R: Clone` would overlap one for `http::Request<B>`), so the layer is told:
/// [`ByClone`], the default, for a `Clone` request such as async-openai's request factory;
/// [`HttpRequests`] ([`RetryLayer::http_requests`]) for an `http::Request<B>` whose body is
/// `Clone`; or a closure ([`RetryLayer::clone_request`]).
pub trait CloneRequest<Request> {
    /// A copy of `request` for another attempt, or `None` if it cannot be made.
    fn clone_request(&self, request: &Request) -> Option<Request>;

    /// Mark `request`, a resend, with its [`ResendCount`], where its type has room for it:
    /// [`HttpRequests`] puts it in the `http::Request`'s extensions. By default, nothing.
    fn mark_resend(&self, request: &mut Request, count: ResendCount) {
        let _ = (request, count);
    }

    /// What `request` costs of a paced key's tokens (its `max_tokens` and its prompt, say:
    /// [`tokens_of`](crate::http::tokens_of) reads them from a JSON body). By default, none:
    /// only its request is paced.
    fn tokens(&self, request: &Request) -> u32 {
        let _ = request;
        0
    }
}

/// Each attempt sends a `clone()` of the request: the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ByClone;

impl<R: Clone> CloneRequest<R> for ByClone {
    fn clone_request(&self, request: &R) -> Option<R> {
        Some(request.clone())
    }
}

/// Each attempt sends an `http::Request<B>` rebuilt from the caller's parts, its body cloned
/// (`Full<Bytes>`, `String`, `Vec<u8>`, `()` or any `B: Clone`): method, URI, version and
/// headers. Its extensions are not carried over (`http::Extensions` cannot be cloned).
///
/// ```
/// use retry_runtime::tower::{CloneRequest, HttpRequests};
///
/// let request = http::Request::post("http://127.0.0.1/v1").header("x-trace", "7").body("{}".to_owned()).unwrap();
/// let copy = HttpRequests.clone_request(&request).unwrap();
/// assert_eq!((copy.method(), copy.uri(), copy.headers()["x-trace"].to_str().unwrap(), copy.body().as_str()),
///            (request.method(), request.uri(), "7", "{}"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct HttpRequests;

impl<B: Clone> CloneRequest<http::Request<B>> for HttpRequests {
    fn clone_request(&self, request: &http::Request<B>) -> Option<http::Request<B>> {
        let mut copy = http::Request::new(request.body().clone());
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        Some(copy)
    }

    fn mark_resend(&self, request: &mut http::Request<B>, count: ResendCount) {
        request.extensions_mut().insert(count);
    }
}

impl<R, F: Fn(&R) -> Option<R>> CloneRequest<R> for F {
    fn clone_request(&self, request: &R) -> Option<R> {
        self(request)
    }
}

impl<C, P, N, Q> RetryLayer<Retry<C, P, N, Q>> {
    /// Retry each call of the wrapped service as `retry` says.
    pub const fn new(retry: Retry<C, P, N, Q>) -> Self {
        RetryLayer {
            core: Core::new(retry),
            requests: ByClone,
        }
    }
}

impl<R, K, Cp, U> RetryLayer<R, K, Cp, U> {
    /// Classify the service's own errors (no response at all) with `errors`, a closure
    /// `Fn(&E) -> Class` or any [`ClassifyError`], instead of calling them all `Transport`.
    ///
    /// ```
    /// use retry_runtime::tower::RetryLayer;
    /// use retry_runtime::{Class, Policy, Retry};
    ///
    /// let layer = RetryLayer::new(Retry::new(&Policy::AVAILABILITY)).classify_errors(
    ///     |error: &std::io::Error| match error.kind() {
    ///         std::io::ErrorKind::InvalidInput => Class::Definitive,
    ///         _ => Class::Transport,
    ///     },
    /// );
    /// # let _ = layer;
    /// ```
    pub fn classify_errors<L>(self, errors: L) -> RetryLayer<R, L, Cp, U> {
        RetryLayer {
            core: self.core.classify_errors(errors),
            requests: self.requests,
        }
    }

    /// Retry `http::Request<B>`s whose body can be cloned, rebuilt from their parts for each
    /// attempt ([`HttpRequests`]): a hyper-util client, a tower-http stack, any tower HTTP
    /// service. The request's extensions are not carried over.
    pub fn http_requests(self) -> RetryLayer<R, K, HttpRequests, U> {
        self.clone_request(HttpRequests)
    }

    /// Make each attempt's request with `requests` (a closure `Fn(&Request) ->
    /// Option<Request>`, or any [`CloneRequest`]). A request it cannot copy for the first
    /// attempt is sent itself, once; one it cannot copy for a later attempt ends the ladder
    /// with the failure it has, handed back as it is. Either way the stop is
    /// [`StopReason::NotResendable`](crate::StopReason::NotResendable), unless the failure
    /// stops the ladder anyway (an answer, the last attempt).
    ///
    /// ```
    /// use retry_runtime::tower::RetryLayer;
    /// use retry_runtime::{Policy, Retry, StopReason, Turn};
    /// use std::time::Duration;
    /// use tower::{Service, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let busy = tower::service_fn(|_: String| async {
    ///     Ok::<_, std::io::Error>(http::Response::builder().status(503).body(()).unwrap())
    /// });
    /// // A request that is never copied: one attempt, and its 503 handed back.
    /// let mut service = tower::ServiceBuilder::new()
    ///     .layer(RetryLayer::new(Retry::new(&Policy::AVAILABILITY)).clone_request(|_: &String| None))
    ///     .service(busy);
    /// let call = service.ready().await.unwrap().call("prompt".to_owned());
    /// let (outcome, report) = Turn::new(Duration::from_secs(60)).run(call).await;
    /// assert_eq!(outcome.into_finished().unwrap().unwrap().status(), 503);
    /// assert_eq!(report.gave_up()[0].reason, StopReason::NotResendable);
    /// # }
    /// ```
    pub fn clone_request<T>(self, requests: T) -> RetryLayer<R, K, T, U> {
        RetryLayer {
            core: self.core,
            requests,
        }
    }

    /// Share what `upstream` says across every call through the layer: a provider's pause
    /// and the outage gate (see [`Upstream`]). An attempt the upstream holds back past a
    /// call's end becomes the service's error, from an [`UpstreamPaused`](crate::UpstreamPaused).
    ///
    /// ```
    /// use retry_runtime::tower::RetryLayer;
    /// use retry_runtime::{Policy, Retry, Upstream};
    ///
    /// static MODEL: Upstream = Upstream::new("model");
    /// let layer = RetryLayer::new(Retry::new(&Policy::AVAILABILITY)).upstream(&MODEL);
    /// # let _ = layer;
    /// ```
    pub fn upstream(self, upstream: &'static Upstream) -> RetryLayer<R, K, Cp, &'static Upstream> {
        self.upstream_by(upstream)
    }

    /// Like [`upstream`](Self::upstream), the upstream chosen for each request by `choose`
    /// (a `Fn(&Request) -> Option<&'static Upstream>`, such as by host; `None`: the call
    /// learns alone), or any [`UpstreamFor`].
    pub fn upstream_by<V>(self, choose: V) -> RetryLayer<R, K, Cp, V> {
        RetryLayer {
            core: self.core.upstream(choose),
            requests: self.requests,
        }
    }

    /// Send each call across `set`, an ordered set of upstreams (see
    /// [`Upstreams`](crate::Upstreams)): each attempt's request, a copy of the call's, is
    /// rewritten by `rewrite` for the upstream it goes to (its host, its path, its `model`
    /// field); a failure another upstream may not share moves the call to the next at once.
    /// `rewrite` is a function or a closure that holds its configuration (each upstream's
    /// base URL, its model name), shared by every call through the layer.
    ///
    /// ```
    /// use retry_runtime::tower::RetryLayer;
    /// use retry_runtime::{Policy, Retry, Upstream, Upstreams};
    /// use std::collections::HashMap;
    ///
    /// static PRIMARY: Upstream = Upstream::new("primary");
    /// static SECONDARY: Upstream = Upstream::new("secondary");
    /// static MODELS: Upstreams = Upstreams::new(&[&PRIMARY, &SECONDARY]);
    ///
    /// // Each upstream's base URL, from the service's configuration.
    /// let bases = HashMap::from([
    ///     ("primary", "https://api.primary.example"),
    ///     ("secondary", "https://api.secondary.example"),
    /// ]);
    /// let to_base = move |request: &mut http::Request<String>, to: &'static Upstream| {
    ///     let uri = format!("{}{}", bases[to.name()], request.uri().path());
    ///     *request.uri_mut() = uri.parse().expect("a base URL and a path make a URI");
    /// };
    /// // The service's error, which holds an attempt every upstream held back: here tower's.
    /// let layer = RetryLayer::new(Retry::new(&Policy::AVAILABILITY))
    ///     .across::<_, tower::BoxError>(&MODELS, to_base);
    /// # let _ = layer;
    /// ```
    pub fn across<Rq, E: From<crate::UpstreamPaused>>(
        self,
        set: &'static crate::Upstreams,
        rewrite: impl Fn(&mut Rq, &'static Upstream) + Send + Sync + 'static,
    ) -> RetryLayer<R, K, Cp, crate::http::Across<Rq, E>> {
        self.upstream_by(crate::http::Across::new(set, rewrite, E::from))
    }

    layer::builders!();
}

impl<S, R: Clone, K: Clone, Cp: Clone, U: Clone> ::tower::Layer<S> for RetryLayer<R, K, Cp, U> {
    type Service = RetryService<S, R, K, Cp, U>;

    fn layer(&self, inner: S) -> Self::Service {
        RetryService {
            inner,
            core: self.core.clone(),
            requests: self.requests.clone(),
        }
    }
}

/// The service a [`RetryLayer`] makes: each call runs the wrapped service under the engine.
/// Its future is boxed and `Send`.
///
/// ```
/// use retry_runtime::tower::{RetryLayer, RetryService};
/// use retry_runtime::{Policy, Retry};
/// use tower::Layer;
///
/// let inner = tower::service_fn(|_: ()| async { Ok::<_, std::io::Error>(http::Response::new(())) });
/// let service: RetryService<_> = RetryLayer::new(Retry::new(&Policy::AVAILABILITY)).layer(inner);
/// # let _ = service;
/// ```
#[derive(Debug, Clone)]
pub struct RetryService<S, R = Retry, K = AsTransport, Cp = ByClone, U = NoUpstream> {
    inner: S,
    core: Core<R, K, U>,
    requests: Cp,
}

impl<S, R, K, Cp, U> RetryService<S, R, K, Cp, U> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, Request, C, P, N, Q, K, Cp, U> ::tower::Service<Request>
    for RetryService<S, Retry<C, P, N, Q>, K, Cp, U>
where
    C: Clock + Clone,
    P: AsRef<Policy> + Clone,
    N: OpName + Clone,
    Q: AsRef<Quota> + Clone,
    U: UpstreamFor<Request, S::Error> + Clone,
    S: ::tower::Service<Request> + Clone,
    S::Response: Reply,
    S::Error: fmt::Display,
    K: ClassifyError<S::Error> + Clone,
    Cp: CloneRequest<Request> + Clone,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S, Request, Retry<C, P, N, Q>, K, Cp>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The service made ready serves the first attempt; later ones use clones of it,
        // each made ready in turn.
        let fresh = self.inner.clone();
        let ready = Some(std::mem::replace(&mut self.inner, fresh));
        let sender = Resender {
            ready,
            template: self.inner.clone(),
            requests: self.requests.clone(),
        };
        ResponseFuture {
            calling: self.core.clone().send(request, sender),
        }
    }
}

pin_project_lite::pin_project! {
    /// The future a [`RetryService`] returns: the call's whole ladder, held in place. It
    /// allocates nothing of its own (the inner service's futures are held in it, as tower's
    /// own retry holds them); only reading a refused `reqwest::Response`'s body, or a stream
    /// to its commit point, boxes its read.
    ///
    /// ```
    /// use retry_runtime::tower::{ResponseFuture, RetryLayer};
    /// use retry_runtime::{Policy, Retry};
    /// use std::convert::Infallible;
    /// use std::future::{Ready, ready};
    /// use tower::{Layer, Service, ServiceExt};
    ///
    /// type Reply = http::Response<&'static str>;
    /// type Inner = tower::util::ServiceFn<fn(u32) -> Ready<Result<Reply, Infallible>>>;
    ///
    /// fn answer(_: u32) -> Ready<Result<Reply, Infallible>> {
    ///     ready(Ok(http::Response::new("hi")))
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let inner: Inner = tower::service_fn(answer);
    /// let mut service = RetryLayer::new(Retry::new(&Policy::AVAILABILITY)).layer(inner);
    /// // A named future: a struct can hold it.
    /// let call: ResponseFuture<Inner, u32> = service.ready().await.unwrap().call(7);
    /// assert_eq!(*call.await.unwrap().body(), "hi");
    /// # }
    /// ```
    #[must_use = "a call does nothing unless polled"]
    pub struct ResponseFuture<S, Request, R = Retry, K = AsTransport, Cp = ByClone>
    where
        S: Clone,
        S: ::tower::Service<Request>,
        S::Response: Reply,
        S::Error: fmt::Display,
        Cp: CloneRequest<Request>,
        R: Clocked,
    {
        #[pin]
        calling: Calling<R, K, Request, Resender<S, Cp>>,
    }
}

impl<S, Request, R, K, Cp> Future for ResponseFuture<S, Request, R, K, Cp>
where
    S: ::tower::Service<Request> + Clone,
    S::Response: Reply,
    S::Error: fmt::Display,
    Cp: CloneRequest<Request>,
    R: Source,
    K: ClassifyError<S::Error>,
{
    type Output = Result<S::Response, S::Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().calling.poll(cx)
    }
}

impl<S, Request, R, K, Cp> fmt::Debug for ResponseFuture<S, Request, R, K, Cp>
where
    S: ::tower::Service<Request> + Clone,
    S::Response: Reply,
    S::Error: fmt::Display,
    Cp: CloneRequest<Request>,
    R: Clocked,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

/// How a [`RetryService`]'s call sends an attempt: the service made ready for the first,
/// clones of it (each made ready in turn) for the rest, and the request copier.
pub(crate) struct Resender<S, Cp> {
    ready: Option<S>,
    template: S,
    requests: Cp,
}

impl<S, Request, Cp> Sender<Request> for Resender<S, Cp>
where
    S: ::tower::Service<Request> + Clone,
    S::Response: Reply,
    S::Error: fmt::Display,
    Cp: CloneRequest<Request>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Readied<S, Request>;

    fn copy(&mut self, request: &Request) -> Option<Request> {
        self.requests.clone_request(request)
    }

    fn tokens(&self, request: &Request) -> u32 {
        self.requests.tokens(request)
    }

    fn send(&mut self, mut request: Request, resend: Option<ResendCount>) -> Readied<S, Request> {
        if let Some(count) = resend {
            self.requests.mark_resend(&mut request, count);
        }
        match self.ready.take() {
            Some(mut service) => Readied::Calling {
                future: service.call(request),
            },
            None => Readied::Readying {
                service: self.template.clone(),
                request: Some(request),
            },
        }
    }
}

pin_project_lite::pin_project! {
    /// One attempt's send through the inner service: made ready (unless it is the one the
    /// caller made ready), then called.
    #[project = ReadiedProj]
    pub(crate) enum Readied<S, Request>
    where
        S: ::tower::Service<Request>,
    {
        Readying { service: S, request: Option<Request> },
        Calling { #[pin] future: S::Future },
    }
}

impl<S, Request> Future for Readied<S, Request>
where
    S: ::tower::Service<Request>,
{
    type Output = Result<S::Response, S::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project() {
                ReadiedProj::Readying { service, request } => {
                    ready!(service.poll_ready(cx))?;
                    let Some(request) = request.take() else {
                        panic!("an attempt's send polled after it was returned");
                    };
                    let future = service.call(request);
                    self.set(Readied::Calling { future });
                }
                ReadiedProj::Calling { future } => return future.poll(cx),
            }
        }
    }
}
