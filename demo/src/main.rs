//! The demo: a model client whose calls are retried by `#[retry]`, against a flaky server on
//! loopback, inside a turn whose hook tells a person what is happening while it waits.
//!
//! Run it with `cargo run -p retry-demo`.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use retry_runtime::{Class, Classify, Turn, retry};

/// What can go wrong calling the model.
#[derive(Debug)]
enum ModelError {
    /// No server was reached, or the connection dropped.
    Transport(reqwest::Error),
    /// The server answered with an error status.
    Status(StatusCode),
}

impl Classify for ModelError {
    fn classify(&self) -> Class {
        match self {
            ModelError::Transport(_) => Class::Transport,
            ModelError::Status(status) => match status.as_u16() {
                429 => Class::RateLimited { retry_after: None },
                502..=504 => Class::Unavailable { retry_after: None },
                500 => Class::ServerError,
                _ => Class::Definitive,
            },
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Transport(error) => write!(f, "transport error: {error}"),
            ModelError::Status(status) => write!(f, "HTTP {status}"),
        }
    }
}

impl From<reqwest::Error> for ModelError {
    fn from(error: reqwest::Error) -> Self {
        match error.status() {
            Some(status) => ModelError::Status(status),
            None => ModelError::Transport(error),
        }
    }
}

struct Model {
    http: reqwest::Client,
    base: String,
}

impl Model {
    /// Ask the model; a 503 or a refused connection is retried, an answer is not.
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
        Ok(response.error_for_status()?.text().await?)
    }
}

/// The far side: `/flaky` is unavailable twice and then answers; `/bad` always says 400.
async fn serve() -> std::io::Result<(SocketAddr, Arc<AtomicU32>)> {
    let hits = Arc::new(AtomicU32::new(0));
    let app = Router::new()
        .route(
            "/flaky",
            post(
                |State(hits): State<Arc<AtomicU32>>, prompt: String| async move {
                    match hits.fetch_add(1, Ordering::SeqCst) {
                        0 | 1 => (StatusCode::SERVICE_UNAVAILABLE, "overloaded".to_owned()),
                        _ => (StatusCode::OK, format!("an answer to {prompt:?}")),
                    }
                },
            ),
        )
        .route(
            "/bad",
            post(|State(hits): State<Arc<AtomicU32>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                (StatusCode::BAD_REQUEST, "prompt too long")
            }),
        )
        .with_state(Arc::clone(&hits));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((address, hits))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (address, hits) = serve().await?;
    let model = Model {
        http: reqwest::Client::new(),
        base: format!("http://{address}"),
    };
    println!("a flaky model is listening on {address}\n");

    let turn = Turn::new(Duration::from_secs(180))
        .on_notice(|event| println!("  [harness tells the member] {event}"));
    let (outcome, report) = turn
        .run(async {
            println!("1. a model that is unavailable twice, then answers:");
            let answer = model.complete("flaky", "hello").await;
            println!(
                "   -> {answer:?} after {} requests\n",
                hits.swap(0, Ordering::SeqCst)
            );

            println!("2. a request the model rejects (400): an answer, never retried:");
            let rejected = model.complete("bad", "hello").await;
            let class = rejected.as_ref().err().map(Classify::classify);
            println!(
                "   -> {} after {} request; class {class:?}, still reported as an answer\n",
                rejected
                    .as_ref()
                    .err()
                    .map_or("ok".into(), ToString::to_string),
                hits.swap(0, Ordering::SeqCst)
            );
            answer.is_ok() && rejected.is_err()
        })
        .await;

    println!("turn report: {report}");
    if outcome.into_finished() == Some(true) {
        Ok(())
    } else {
        Err("the demo did not go as expected".into())
    }
}
