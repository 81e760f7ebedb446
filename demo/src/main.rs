//! The demo: a model client whose calls are retried by `#[retry]`, against a model API on
//! loopback that is overloaded, rate limited and strict by turns, inside a turn whose hook
//! tells a person what is happening while it waits.
//!
//! Run it with `cargo run -p retry-demo`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::post;
use retry_runtime::http::{HttpError, ResponseExt};
use retry_runtime::{Class, Classify, Turn, retry};

/// What can go wrong calling the model: the library's own errors, classified by its one table.
#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    /// The model answered with an error status; the hint headers and error body are kept.
    #[error(transparent)]
    #[classify(from)]
    Http(#[from] HttpError),
    /// No answer was read: refused, reset, cut off, timed out.
    #[error(transparent)]
    #[classify(from)]
    Request(#[from] reqwest::Error),
}

struct Model {
    http: reqwest::Client,
    base: String,
}

impl Model {
    /// Ask the model: an overload or a refused connection is retried, an answer is not.
    #[retry(
        policy = "availability",
        attempts = 4,
        base_ms = 250,
        budget = "turn",
        name = "model"
    )]
    async fn complete(&self, route: &str, prompt: &str) -> Result<String, ModelError> {
        let url = format!("{}/{route}", self.base);
        let response = self.http.post(url).body(prompt.to_owned()).send().await?;
        Ok(response.check_status().await?.text().await?)
    }
}

type Answer = (StatusCode, HeaderMap, String);

fn answer(status: u16, headers: &[(&'static str, &'static str)], body: &str) -> Answer {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(*name, HeaderValue::from_static(value));
    }
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, map, body.to_owned())
}

/// The far side, as a model API answers:
/// - `/v1/busy` is overloaded (529, `overloaded_error`), then unavailable with
///   `Retry-After: 1`, then answers;
/// - `/v1/billing` refuses with OpenAI's `insufficient_quota` 429;
/// - `/v1/long` says the prompt is too long (Anthropic's 400).
async fn serve() -> std::io::Result<(SocketAddr, Arc<AtomicU32>)> {
    let hits = Arc::new(AtomicU32::new(0));
    let app = Router::new()
        .route(
            "/v1/busy",
            post(
                |State(hits): State<Arc<AtomicU32>>, prompt: String| async move {
                    match hits.fetch_add(1, Ordering::SeqCst) {
                        0 => answer(
                            529,
                            &[],
                            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                        ),
                        1 => answer(503, &[("retry-after", "1")], "try again in a second"),
                        _ => answer(200, &[], &format!("an answer to {prompt:?}")),
                    }
                },
            ),
        )
        .route(
            "/v1/billing",
            post(|State(hits): State<Arc<AtomicU32>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                answer(
                    429,
                    &[("retry-after", "20")],
                    r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
                )
            }),
        )
        .route(
            "/v1/long",
            post(|State(hits): State<Arc<AtomicU32>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                answer(
                    400,
                    &[],
                    r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200001 tokens > 200000 maximum"}}"#,
                )
            }),
        )
        .with_state(Arc::clone(&hits));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((address, hits))
}

/// One line about a failed call: what it was, how the table classed it, and how many
/// requests the server saw.
fn describe(result: &Result<String, ModelError>, hits: &AtomicU32) -> String {
    let requests = hits.swap(0, Ordering::SeqCst);
    match result {
        Ok(reply) => format!("{reply} after {requests} requests"),
        Err(error) => {
            let overflow = match error {
                ModelError::Http(http) if http.is_context_overflow() => ", a context overflow",
                _ => "",
            };
            format!(
                "{error}: class {}{overflow}, after {requests} request(s)",
                error.classify().name()
            )
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (address, hits) = serve().await?;
    let model = Model {
        http: reqwest::Client::new(),
        base: format!("http://{address}"),
    };
    println!("a model API is listening on {address}\n");

    let turn = Turn::new(Duration::from_secs(180))
        .on_notice(|event| println!("  [harness tells the member] {event}"));
    let started = Instant::now();
    let (outcome, report) = turn
        .run(async {
            println!("1. overloaded (529), then unavailable with Retry-After: 1, then an answer:");
            let answer = model.complete("v1/busy", "hello").await;
            println!(
                "   -> {} ({} ms; the 1 s hint was a floor under the 500 ms rung)\n",
                describe(&answer, &hits),
                started.elapsed().as_millis()
            );

            println!("2. a billing refusal (429 insufficient_quota): no wait clears it:");
            let billing = model.complete("v1/billing", "hello").await;
            println!("   -> {}\n", describe(&billing, &hits));

            println!("3. a prompt that is too long (400): an answer, never retried:");
            let long = model.complete("v1/long", "hello").await;
            println!("   -> {}\n", describe(&long, &hits));

            answer.is_ok()
                && matches!(
                    billing.as_ref().map_err(Classify::classify),
                    Err(Class::QuotaExhausted)
                )
                && matches!(&long, Err(ModelError::Http(error)) if error.is_context_overflow())
        })
        .await;

    println!("turn report: {report}");
    if outcome.into_finished() == Some(true) {
        Ok(())
    } else {
        Err("the demo did not go as expected".into())
    }
}
