//! The demo: a model client whose calls are retried by `#[retry]`, against a model API on
//! loopback that is overloaded, rate limited and strict by turns, inside a turn whose hook
//! tells a person what is happening while it waits; and a streamed call whose stream fails
//! with an `overloaded_error` event after its head, retried before its first text.
//!
//! Run it with `cargo run -p retry-demo --features metrics`: with the feature, it installs
//! `metrics-util`'s debugging recorder and prints what a dashboard would read at its end.

use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::post;
use futures_util::StreamExt;
use retry_runtime::http::{HttpError, ResponseExt, StreamError};
use retry_runtime::{Class, Classify, EndedEarly, GaveUp, Policy, Retry, Turn, retry, sse};

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
    /// The stream failed after its `200` head: an error event, a cut, a malformed frame.
    #[error(transparent)]
    #[classify(from)]
    Stream(#[from] StreamError),
    /// The stream ended on its preamble, before any text.
    #[error(transparent)]
    #[classify(from)]
    Ended(#[from] EndedEarly),
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

    /// Stream the model's reply, as Anthropic streams it: a failure before the first text
    /// (here an `overloaded_error` event after `message_start`) is retried, and the caller sees
    /// one attempt's events only. Returns the text and how many `message_start`s it saw.
    async fn stream(&self, prompt: &str) -> Result<(String, u32), GaveUp<ModelError>> {
        let url = format!("{}/v1/stream", self.base);
        let mut events = pin!(
            Retry::new(&Policy::AVAILABILITY)
                .named("model stream")
                .stream(|_attempt| {
                    let request = self.http.post(&url).body(prompt.to_owned());
                    async move {
                        let response = request.send().await?.check_status().await?;
                        Ok::<_, ModelError>(response.events())
                    }
                })
                .commit_when(sse::is_content)
        );
        let (mut text, mut starts) = (String::new(), 0);
        while let Some(event) = events.next().await {
            let event = event?;
            match event.event() {
                "message_start" => starts += 1,
                "content_block_delta" => text.push_str(&delta_text(event.data())),
                _ => {}
            }
        }
        Ok((text, starts))
    }
}

/// The text of an Anthropic `content_block_delta` event's data.
fn delta_text(data: &str) -> String {
    let delta: serde_json::Value = serde_json::from_str(data).unwrap_or_default();
    delta["delta"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The events of a streamed reply, as Anthropic sends them: on the first request, overloaded
/// after `message_start` and `ping`; then the reply.
fn stream_body(request: u32) -> Body {
    let events: &[(&str, &str)] = if request == 0 {
        &[
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_1","role":"assistant","content":[]}}"#,
            ),
            ("ping", r#"{"type":"ping"}"#),
            (
                "error",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
        ]
    } else {
        &[
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_2","role":"assistant","content":[]}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type":"ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", member."}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ]
    };
    let chunks = events.iter().map(|(name, data)| {
        Ok::<_, std::convert::Infallible>(format!("event: {name}\ndata: {data}\n\n"))
    });
    Body::from_stream(futures_util::stream::iter(chunks.collect::<Vec<_>>()))
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
/// - `/v1/long` says the prompt is too long (Anthropic's 400);
/// - `/v1/stream` streams a reply, overloaded inside its first `200` stream.
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
        .route(
            "/v1/stream",
            post(|State(hits): State<Arc<AtomicU32>>| async move {
                let request = hits.fetch_add(1, Ordering::SeqCst);
                let mut response = axum::response::Response::new(stream_body(request));
                response.headers_mut().insert(
                    "content-type",
                    HeaderValue::from_static("text/event-stream"),
                );
                response
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
    #[cfg(feature = "metrics")]
    let snapshotter = {
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install()?;
        snapshotter
    };
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

            println!(
                "4. a streamed reply: `200`, message_start, ping, then an overloaded_error event:"
            );
            let streamed = model.stream("hello").await;
            let requests = hits.swap(0, Ordering::SeqCst);
            match &streamed {
                Ok((text, starts)) => println!(
                    "   -> {text:?} after {requests} requests; the caller saw {starts} message_start \
                     (the failed attempt's events were held, never delivered)\n"
                ),
                Err(gave_up) => println!("   -> {gave_up}, after {requests} requests\n"),
            }

            answer.is_ok()
                && matches!(
                    billing.as_ref().map_err(Classify::classify),
                    Err(Class::QuotaExhausted)
                )
                && matches!(&long, Err(ModelError::Http(error)) if error.is_context_overflow())
                && matches!(&streamed, Ok((text, 1)) if text == "Hello, member.")
        })
        .await;

    println!("turn report: {report}");
    #[cfg(feature = "metrics")]
    print_metrics(&snapshotter);
    if outcome.into_finished() == Some(true) {
        Ok(())
    } else {
        Err("the demo did not go as expected".into())
    }
}

/// What a dashboard would read: each series of the `retry_` metrics, a histogram as its count
/// and sum.
#[cfg(feature = "metrics")]
fn print_metrics(snapshotter: &metrics_util::debugging::Snapshotter) {
    use metrics_util::debugging::DebugValue;

    let mut rows: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let labels: Vec<String> = key
                .labels()
                .map(|label| format!("{}=\"{}\"", label.key(), label.value()))
                .collect();
            let value = match value {
                DebugValue::Counter(count) => count.to_string(),
                DebugValue::Gauge(gauge) => gauge.to_string(),
                DebugValue::Histogram(samples) => {
                    let sum: f64 = samples.iter().map(|sample| sample.into_inner()).sum();
                    format!("{} samples, {sum:.3} s in all", samples.len())
                }
            };
            format!("  {}{{{}}} {value}", key.name(), labels.join(","))
        })
        .collect();
    rows.sort();
    println!("\nmetrics (feature `metrics`, through the `metrics` facade):");
    for row in rows {
        println!("{row}");
    }
}
