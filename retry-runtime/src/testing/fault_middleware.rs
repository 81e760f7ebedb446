//! The reqwest middleware: a script answered before the rest of the chain, with no socket
//! (feature `reqwest-middleware`). Past the script with no default, the request goes on; it
//! must not classify or retry anything itself.

use reqwest_middleware::{Middleware, Next};

use crate::test_scope::ScopeClock;
use crate::testing::call::play;
use crate::testing::exchange::{ScriptedRequest, ScriptedResponse};
use crate::testing::script::{Script, cursor};

/// A reqwest middleware that answers each request from a [`Script`] before the rest of the
/// chain, and sends the requests past the script on. Put it after a
/// [`RetryMiddleware`](crate::reqwest_middleware::RetryMiddleware), where the network would
/// be. A failure with no answer is a `reqwest_middleware::Error::Middleware` holding an
/// [`ActError`](crate::testing::ActError).
///
/// ```
/// use retry_runtime::reqwest_middleware::RetryMiddleware;
/// use retry_runtime::testing::{self, Act, FaultMiddleware, Script};
/// use retry_runtime::{Policy, Retry};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let script = Script::new([Act::rate_limited(Duration::from_secs(2)), Act::ok("reply")]);
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(RetryMiddleware::new(Retry::new(&Policy::AVAILABILITY)))
///     .with(FaultMiddleware::new(script.clone()))
///     .build();
/// let request = client.post("http://model.test/v1/messages").body("hello").send();
/// let (response, recorded) = testing::scope(request).await;
/// assert_eq!(response.unwrap().text().await.unwrap(), "reply");
/// assert_eq!(script.asked()[1].body, "hello");
/// assert!(recorded.waits()[0] >= Duration::from_secs(2));
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct FaultMiddleware {
    script: Script,
}

impl FaultMiddleware {
    /// A middleware that plays `script`.
    ///
    /// ```
    /// let _ = retry_runtime::testing::FaultMiddleware::new(retry_runtime::testing::Script::new([]));
    /// ```
    pub fn new(script: Script) -> FaultMiddleware {
        FaultMiddleware { script }
    }
}

#[async_trait::async_trait]
impl Middleware for FaultMiddleware {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut http::Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let asked = request.asked();
        let (last_event_id, starting_after) = cursor(&asked.path, asked.last_event_id.as_deref());
        let Some(act) = self.script.next(asked, &ScopeClock::current()) else {
            return next.run(request, extensions).await;
        };
        match play(act, last_event_id.as_deref(), starting_after).await {
            Ok(played) => Ok(reqwest::Response::scripted(
                played.status,
                played.headers,
                played.body,
            )),
            Err(error) => Err(reqwest_middleware::Error::middleware(error)),
        }
    }
}
