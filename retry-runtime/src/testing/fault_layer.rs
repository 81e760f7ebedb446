//! The tower layer: a script answered in front of a service, with no socket (feature
//! `tower`). Past the script with no default, the request goes on to the service; it must
//! not classify or retry anything itself (that is the retry layer's part, outside it).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::test_scope::ScopeClock;
use crate::testing::act::Act;
use crate::testing::call::{ActError, play};
use crate::testing::exchange::{ScriptedRequest, ScriptedResponse};
use crate::testing::script::{Script, cursor};

/// A tower layer that answers each request from a [`Script`] before the service it wraps,
/// and hands the service the requests past the script. Put it inside a
/// [`RetryLayer`](crate::tower::RetryLayer), where the network would be.
///
/// ```
/// use retry_runtime::testing::{self, Act, FaultLayer, Script};
/// use retry_runtime::tower::RetryLayer;
/// use retry_runtime::{Policy, Retry};
/// use tower::{Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let script = Script::new([Act::anthropic_overloaded()]);
/// let real = tower::service_fn(|_: http::Request<()>| async {
///     Ok::<_, tower::BoxError>(http::Response::new(String::from("reply")))
/// });
/// let mut service = tower::ServiceBuilder::new()
///     .layer(RetryLayer::new(Retry::new(&Policy::AVAILABILITY)))
///     .layer(FaultLayer::new(script.clone()))
///     .service(real);
/// let request = http::Request::post("/v1/messages").body(()).unwrap();
/// let (response, recorded) = testing::scope(service.ready().await.unwrap().call(request)).await;
/// assert_eq!(response.unwrap().into_body(), "reply");
/// assert_eq!(script.requests(), 2);
/// assert_eq!(recorded.waits().len(), 1);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct FaultLayer {
    script: Script,
}

impl FaultLayer {
    /// A layer that plays `script`.
    ///
    /// ```
    /// let _ = retry_runtime::testing::FaultLayer::new(retry_runtime::testing::Script::new([]));
    /// ```
    pub fn new(script: Script) -> FaultLayer {
        FaultLayer { script }
    }
}

impl<S> ::tower::Layer<S> for FaultLayer {
    type Service = FaultService<S>;

    fn layer(&self, inner: S) -> FaultService<S> {
        FaultService {
            inner,
            script: self.script.clone(),
        }
    }
}

/// The service [`FaultLayer`] makes: the script's answer, or the wrapped service's.
///
/// ```
/// use retry_runtime::testing::{FaultLayer, FaultService, Script};
/// use tower::Layer;
///
/// let inner = tower::service_fn(|_: http::Request<()>| async {
///     Ok::<_, tower::BoxError>(http::Response::new(String::new()))
/// });
/// let _: FaultService<_> = FaultLayer::new(Script::new([])).layer(inner);
/// ```
#[derive(Debug, Clone)]
pub struct FaultService<S> {
    inner: S,
    script: Script,
}

impl<S, Request> ::tower::Service<Request> for FaultService<S>
where
    S: ::tower::Service<Request>,
    S::Future: Send + 'static,
    S::Response: ScriptedResponse + Send + 'static,
    S::Error: From<ActError> + Send + 'static,
    Request: ScriptedRequest,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let asked = request.asked();
        let (last_event_id, starting_after) = cursor(&asked.path, asked.last_event_id.as_deref());
        match self.script.next(asked, &ScopeClock::current()) {
            Some(act) => Box::pin(answer(act, last_event_id, starting_after)),
            None => Box::pin(self.inner.call(request)),
        }
    }
}

async fn answer<R: ScriptedResponse, E: From<ActError>>(
    act: Act,
    last_event_id: Option<String>,
    starting_after: Option<u64>,
) -> Result<R, E> {
    let played = play(act, last_event_id.as_deref(), starting_after).await?;
    Ok(R::scripted(played.status, played.headers, played.body))
}
