//! The README's fallback figures, on real sockets: `cargo run --release -p retry-bench
//! --example fallback`; LiteLLM's in the same session with `bench/peers/litellm_fallback.py`.
//!
//! Two OpenAI-style providers on loopback: the primary down 5 s from the start (`503`, no
//! hint), the secondary healthy, answering in 20 ms. 60 calls arrive at 20 a second, each a
//! `Retry` of the `availability` policy: by hand (the primary's whole ladder, then the
//! secondary's), or across the two (`Retry::across`). Each provider counts its requests.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use retry_runtime::http::{CallError, ResponseExt};
use retry_runtime::{Policy, Retry, Upstream, Upstreams};
use tokio::time::Instant;

const OUTAGE: Duration = Duration::from_secs(5);
const LATENCY: Duration = Duration::from_millis(20);

#[derive(Default)]
struct Counts {
    requests: AtomicU32,
    during_outage: AtomicU32,
}

struct Provider {
    start: Instant,
    down_for: Duration,
    counts: Counts,
}

async fn answer(State(provider): State<Arc<Provider>>) -> Response {
    provider.counts.requests.fetch_add(1, Ordering::Relaxed);
    if provider.start.elapsed() < provider.down_for {
        provider
            .counts
            .during_outage
            .fetch_add(1, Ordering::Relaxed);
        return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
    }
    tokio::time::sleep(LATENCY).await;
    (StatusCode::OK, r#"{"choices":[]}"#).into_response()
}

async fn serve(start: Instant, down_for: Duration) -> (SocketAddr, Arc<Provider>) {
    let provider = Arc::new(Provider {
        start,
        down_for,
        counts: Counts::default(),
    });
    let app = Router::new()
        .fallback(answer)
        .with_state(Arc::clone(&provider));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, provider)
}

static PRIMARY: Upstream = Upstream::new("primary");
static SECONDARY: Upstream = Upstream::new("secondary");
static MODELS: Upstreams = Upstreams::new(&[&PRIMARY, &SECONDARY]);

async fn send(client: &reqwest::Client, addr: SocketAddr) -> Result<(), CallError> {
    let url = format!("http://{addr}/v1/chat/completions");
    client.post(url).send().await?.check_status().await?;
    Ok(())
}

/// One row: 60 calls at 20 a second against a fresh pair of providers.
async fn row(across: bool) -> String {
    let start = Instant::now();
    let (primary_addr, primary) = serve(start, OUTAGE).await;
    let (secondary_addr, secondary) = serve(start, Duration::ZERO).await;
    let client = reqwest::Client::new();
    let took = Arc::new(Mutex::new(Vec::new()));
    let failed = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for n in 0..60_u32 {
        let (client, took, failed) = (client.clone(), Arc::clone(&took), Arc::clone(&failed));
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start + Duration::from_millis(50) * n).await;
            let began = Instant::now();
            let retry = Retry::new(&Policy::AVAILABILITY);
            // `run_fn`: the calls are spawned, and rustc cannot prove `Send` for `run`'s closure.
            let on = |addr: SocketAddr| {
                let client = client.clone();
                move |_| {
                    let client = client.clone();
                    async move { send(&client, addr).await }
                }
            };
            let ok = if across {
                let client = client.clone();
                let call = retry.across(&MODELS).run_fn(move |to: &'static Upstream| {
                    let client = client.clone();
                    let addr = match to.name() {
                        "primary" => primary_addr,
                        _ => secondary_addr,
                    };
                    async move { send(&client, addr).await }
                });
                call.await.is_ok()
            } else {
                retry.run_fn(on(primary_addr)).await.is_ok()
                    || retry.run_fn(on(secondary_addr)).await.is_ok()
            };
            took.lock().unwrap().push(began.elapsed());
            if !ok {
                failed.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    PRIMARY.reset();
    let took = took.lock().unwrap();
    let mean = took.iter().sum::<Duration>() / 60;
    let max = took.iter().max().copied().unwrap_or_default();
    format!(
        "| {} | {} ({} during the outage) | {} | {:.3} s | {:.3} s | {} |",
        if across {
            "`Retry::across`, the two upstreams in order"
        } else {
            "`availability` on the primary, then on the secondary, by hand"
        },
        primary.counts.requests.load(Ordering::Relaxed),
        primary.counts.during_outage.load(Ordering::Relaxed),
        secondary.counts.requests.load(Ordering::Relaxed),
        mean.as_secs_f64(),
        max.as_secs_f64(),
        failed.load(Ordering::Relaxed),
    )
}

#[tokio::main]
async fn main() {
    println!(
        "| | requests to the primary | to the secondary | mean call | longest call | failed |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for across in [false, true] {
        println!("{}", row(across).await);
    }
}
