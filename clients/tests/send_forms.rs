//! Issue 13: the public explicit form that compiles where `Send` is required,
//! `Retry::run_fn` (and `TimedRetry::run_fn`), spawned on a multi-thread runtime and used
//! inside a tower `call`, an `#[async_trait]` method and a `reqwest_middleware::Middleware`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use retry_runtime::{Class, GaveUp, Policy, Retry, TimedOut, testing};

/// Fails twice with a 503-like class, then answers with the attempt count.
fn flaky(calls: &Arc<AtomicU32>) -> impl Future<Output = Result<u32, Class>> + Send + use<> {
    let calls = Arc::clone(calls);
    async move {
        match calls.fetch_add(1, Ordering::SeqCst) {
            0 | 1 => Err(Class::Unavailable { retry_after: None }),
            n => Ok(n + 1),
        }
    }
}

async fn retried(calls: Arc<AtomicU32>) -> Result<u32, GaveUp<Class>> {
    Retry::new(&Policy::AVAILABILITY)
        .named("flaky")
        .run_fn(move |_attempt| flaky(&calls))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_fn_spawns() {
    let calls = Arc::new(AtomicU32::new(0));
    let spawned = tokio::spawn(testing::scope(retried(Arc::clone(&calls))));
    let (result, recorded) = spawned.await.unwrap();
    assert_eq!(result.unwrap(), 3);
    assert_eq!(recorded.waits().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_run_fn_spawns() {
    let timed = Retry::new(&Policy::TRANSIENT).timeout(Duration::from_millis(20));
    let spawned = tokio::spawn(testing::scope(timed.run_fn(|attempt| async move {
        if attempt == 1 {
            std::future::pending::<()>().await;
        }
        Ok::<_, TimedOut>(attempt)
    })));
    let (result, recorded) = spawned.await.unwrap();
    assert_eq!(result.unwrap(), 2);
    assert_eq!(recorded.waits().len(), 1);
}

/// A hand-written tower service whose `call` runs the engine.
#[derive(Clone)]
struct Flaky(Arc<AtomicU32>);

impl tower::Service<()> for Flaky {
    type Response = u32;
    type Error = GaveUp<Class>;
    type Future = Pin<Box<dyn Future<Output = Result<u32, GaveUp<Class>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        Box::pin(retried(Arc::clone(&self.0)))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_fn_inside_a_tower_call() {
    use tower::ServiceExt;
    let calls = Arc::new(AtomicU32::new(0));
    let service = Flaky(Arc::clone(&calls));
    let spawned = tokio::spawn(testing::scope(service.oneshot(())));
    let (result, _) = spawned.await.unwrap();
    assert_eq!(result.unwrap(), 3);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[async_trait::async_trait]
trait Model {
    async fn complete(&self, prompt: &str) -> Result<String, GaveUp<Class>>;
}

struct Remote {
    calls: Arc<AtomicU32>,
}

#[async_trait::async_trait]
impl Model for Remote {
    async fn complete(&self, prompt: &str) -> Result<String, GaveUp<Class>> {
        let prompt = prompt.to_owned();
        Retry::new(&Policy::AVAILABILITY)
            .named("complete")
            .run_fn(|_attempt| {
                let answer = flaky(&self.calls);
                let prompt = prompt.clone();
                async move { answer.await.map(|n| format!("{prompt} #{n}")) }
            })
            .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_fn_inside_an_async_trait_method() {
    let model: Arc<dyn Model + Send + Sync> = Arc::new(Remote {
        calls: Arc::new(AtomicU32::new(0)),
    });
    let spawned = tokio::spawn(testing::scope(async move { model.complete("hi").await }));
    let (result, recorded) = spawned.await.unwrap();
    assert_eq!(result.unwrap(), "hi #3");
    assert_eq!(recorded.waits().len(), 2);
}

/// A hand-written middleware that retries the rest of the chain with `run_fn` (what
/// `RetryMiddleware` does, classified by the crate's `reqwest::Error` impl instead).
struct Counting;

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Counting {
    async fn handle(
        &self,
        request: reqwest::Request,
        _extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let outcome = Retry::new(&Policy::AVAILABILITY)
            .run_fn(move |_attempt| {
                let request = request.try_clone();
                let next = next.clone();
                async move {
                    let mut extensions = http::Extensions::new();
                    let request = request.ok_or(Class::Definitive)?;
                    match next.run(request, &mut extensions).await {
                        Ok(response) if response.status().is_server_error() => {
                            Err(Class::Unavailable { retry_after: None })
                        }
                        Ok(response) => Ok(response),
                        Err(_) => Err(Class::Transport),
                    }
                }
            })
            .await;
        outcome.map_err(|gave_up| {
            reqwest_middleware::Error::middleware(std::io::Error::other(gave_up.to_string()))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_fn_inside_a_middleware() {
    let server = retry_tests::Server::start([
        retry_tests::Step::status(503),
        retry_tests::Step::ok("reply"),
    ])
    .await;
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(Counting)
        .build();
    let url = server.url();
    let spawned = tokio::spawn(testing::scope(async move { client.get(url).send().await }));
    let (response, recorded) = spawned.await.unwrap();
    assert_eq!(response.unwrap().status(), 200);
    assert_eq!(server.requests(), 2);
    assert_eq!(recorded.waits().len(), 1);
}
