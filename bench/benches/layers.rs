//! Issue 21's performance row: `cargo bench -p retry-bench --bench layers`.
//!
//! A loopback axum server streams a 10 MiB event stream (`text/event-stream`, OpenAI-style
//! chat chunks, 16 KiB body chunks). A reqwest client reads it to the end, through:
//!
//! - a tower stack without the layer, and the same stack with `RetryLayer` (streams on);
//! - a `reqwest_middleware` client without middleware, and with `RetryMiddleware`.
//!
//! For each, over `RUNS` runs (interleaved, each run starting at another row, so a slow
//! moment of the machine hits all alike):
//! the fastest time to first byte (request sent to first body chunk in hand: with the layer,
//! the time it reads up to the commit point) and the fastest full read, as MiB/s.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::HeaderValue;
use axum::response::Response;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::RetryLayer;
use retry_runtime::{Policy, Retry};
use tower::{Service, ServiceExt};

const SIZE: usize = 10 * 1024 * 1024;
const CHUNK: usize = 16 * 1024;
const RUNS: usize = 200;

fn body() -> Bytes {
    let mut body = String::with_capacity(SIZE + 256);
    body.push_str("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n");
    while body.len() < SIZE {
        body.push_str("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"token \"},\"finish_reason\":null}]}\n\n");
    }
    body.push_str("data: [DONE]\n\n");
    Bytes::from(body)
}

async fn serve(body: Bytes) -> SocketAddr {
    let app = Router::new().fallback(move || {
        let body = body.clone();
        async move {
            let chunks: Vec<Result<Bytes, Infallible>> = (0..body.len())
                .step_by(CHUNK)
                .map(|start| Ok(body.slice(start..(start + CHUNK).min(body.len()))))
                .collect();
            let mut response = Response::new(Body::from_stream(futures_util::stream::iter(chunks)));
            response.headers_mut().insert(
                "content-type",
                HeaderValue::from_static("text/event-stream"),
            );
            response
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Read `response` to its end: (time to first chunk from `sent`, total time, bytes).
async fn read(mut response: reqwest::Response, sent: Instant) -> (Duration, Duration, usize) {
    let mut first = None;
    let mut bytes = 0;
    while let Some(chunk) = response.chunk().await.unwrap() {
        first.get_or_insert_with(|| sent.elapsed());
        bytes += chunk.len();
    }
    (first.unwrap_or_default(), sent.elapsed(), bytes)
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// One way of sending the request.
type Sender = Box<dyn Fn(String) -> BoxFuture<reqwest::Response>>;

fn tower_stack(layered: bool) -> Sender {
    let client = reqwest::Client::new();
    let inner = tower::service_fn(move |url: String| client.post(url).send());
    if layered {
        let service = tower::ServiceBuilder::new()
            .layer(RetryLayer::new(
                Retry::new(&Policy::AVAILABILITY).named("model"),
            ))
            .service(inner);
        Box::new(move |url| {
            let mut service = service.clone();
            Box::pin(async move { service.ready().await.unwrap().call(url).await.unwrap() })
        })
    } else {
        Box::new(move |url| {
            let mut service = inner.clone();
            Box::pin(async move { service.ready().await.unwrap().call(url).await.unwrap() })
        })
    }
}

fn middleware_client(layered: bool) -> Sender {
    let mut builder = reqwest_middleware::ClientBuilder::new(reqwest::Client::new());
    if layered {
        builder = builder.with(RetryMiddleware::new(
            Retry::new(&Policy::AVAILABILITY).named("model"),
        ));
    }
    let client = builder.build();
    Box::new(move |url| {
        let request = client.post(url).send();
        Box::pin(async move { request.await.unwrap() })
    })
}

struct Row {
    name: &'static str,
    send: Sender,
    first_byte: Duration,
    read: Duration,
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let body = body();
        let addr = serve(body.clone()).await;
        let url = format!("http://{addr}/v1/chat/completions");
        let mut rows = [
            ("tower stack, no layer", tower_stack(false)),
            ("tower stack, RetryLayer", tower_stack(true)),
            ("reqwest-middleware, no middleware", middleware_client(false)),
            ("reqwest-middleware, RetryMiddleware", middleware_client(true)),
        ]
        .map(|(name, send)| Row {
            name,
            send,
            first_byte: Duration::MAX,
            read: Duration::MAX,
        });
        // One row only, ten reads, for an instruction count:
        // `LAYERS_BENCH_ONCE=1 valgrind --tool=callgrind target/release/deps/layers-*`.
        if let Some(only) = std::env::var("LAYERS_BENCH_ONCE")
            .ok()
            .and_then(|row| row.parse::<usize>().ok())
        {
            for _ in 0..10 {
                let sent = Instant::now();
                let response = (rows[only].send)(url.clone()).await;
                assert_eq!(read(response, sent).await.2, body.len());
            }
            return;
        }
        for run in 0..=RUNS {
            // Each run starts with another row, so no row always follows the same one.
            let count = rows.len();
            for index in (0..count).map(|i| (i + run) % count) {
                let row = &mut rows[index];
                let sent = Instant::now();
                let response = (row.send)(url.clone()).await;
                let (first, total, bytes) = read(response, sent).await;
                assert_eq!(bytes, body.len(), "{} reads every byte", row.name);
                // The first run warms the connection pools and the allocator.
                if run > 0 {
                    row.first_byte = row.first_byte.min(first);
                    row.read = row.read.min(total);
                }
            }
        }
        let mib = body.len() as f64 / (1024.0 * 1024.0);
        println!(
            "| {:.1} MiB event stream, loopback, fastest of {RUNS} | first byte | read | MiB/s | time vs. without |",
            mib
        );
        println!("|---|---:|---:|---:|---:|");
        for pair in rows.chunks(2) {
            for row in pair {
                println!(
                    "| {} | {} µs | {:.2} ms | {:.0} | {:.3}x |",
                    row.name,
                    row.first_byte.as_micros(),
                    row.read.as_secs_f64() * 1e3,
                    mib / row.read.as_secs_f64(),
                    row.read.as_secs_f64() / pair[0].read.as_secs_f64(),
                );
            }
        }
    });
}
