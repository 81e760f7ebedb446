//! Upstreams on real sockets: a provider of our own on loopback, with one key's shared limit
//! (a token bucket, refused with a hint) or an outage, counts what it saw; many calls on one
//! [`Upstream`] share what it said. Each call's client stamps its request with when it was
//! sent, so the provider counts requests sent inside a pause it had announced (not those
//! already in flight when it announced it) and requests during an outage.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use retry_runtime::http::{HttpError, ResponseExt};
use retry_runtime::{Class, Classify, Policy, Retry, Upstream, UpstreamPaused};
use tokio::time::Instant;

/// A call's failure: the provider's answer, the connection's, or held back by the upstream.
#[derive(Debug, thiserror::Error)]
enum Failed {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
    #[error(transparent)]
    Paused(#[from] UpstreamPaused),
}

impl Classify for Failed {
    fn classify(&self) -> Class {
        match self {
            Failed::Http(error) => error.classify(),
            Failed::Transport(error) => error.classify(),
            Failed::Paused(paused) => paused.classify(),
        }
    }
}

/// How the provider refuses: its status and the hint it gives.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// `429` with `Retry-After` in seconds.
    RetryAfter,
    /// `429` with `retry-after-ms`.
    RetryAfterMs,
    /// Anthropic's `529 overloaded_error`, with `retry-after`.
    Overloaded,
    /// Google's `429 RESOURCE_EXHAUSTED` with a `RetryInfo` in its body.
    RetryInfo,
}

/// What the provider saw.
#[derive(Debug, Default)]
struct Seen {
    requests: u32,
    refused: u32,
    /// Sent after a pause was announced and before it ended.
    inside_pause: u32,
    /// Arrived while the provider was out.
    during_outage: u32,
}

struct Provider {
    start: Instant,
    /// Tokens left, and when the bucket was last filled.
    tokens: f64,
    filled: Instant,
    rate: f64,
    pause: Duration,
    refusal: Refusal,
    /// The pause the provider announced last: from when, to when.
    announced: Option<(Instant, Instant)>,
    /// Out (`503`, no hint) until then.
    out_until: Option<Instant>,
    seen: Seen,
}

type Shared = Arc<Mutex<Provider>>;

/// How long after a pause is announced a request sent is still one in flight.
const IN_FLIGHT: Duration = Duration::from_millis(20);

async fn answer(State(provider): State<Shared>, headers: HeaderMap) -> Response {
    let now = Instant::now();
    let mut p = provider.lock().unwrap();
    let sent = headers
        .get("x-sent-ns")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .map(|ns| p.start + Duration::from_nanos(ns))
        .unwrap_or(now);
    p.seen.requests += 1;
    // A request sent within `IN_FLIGHT` of the announcement was in flight when it was
    // announced: the refusal had not reached its caller yet (loopback delivery and the read
    // of a refusal's body take well under it; a pause here lasts 400 ms or more).
    if let Some((from, to)) = p.announced
        && sent > from + IN_FLIGHT
        && sent < to
    {
        p.seen.inside_pause += 1;
    }
    if let Some(until) = p.out_until
        && now < until
    {
        p.seen.during_outage += 1;
        return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
    }
    let elapsed = now.saturating_duration_since(p.filled).as_secs_f64();
    p.tokens = (p.tokens + elapsed * p.rate).min(p.rate);
    p.filled = now;
    if p.tokens >= 1.0 {
        p.tokens -= 1.0;
        if headers
            .get("accept")
            .is_some_and(|accept| accept == "text/event-stream")
        {
            let events = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
                          data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n\
                          data: [DONE]\n\n";
            let mut response = (StatusCode::OK, events).into_response();
            response.headers_mut().insert(
                "content-type",
                HeaderValue::from_static("text/event-stream"),
            );
            return response;
        }
        return (StatusCode::OK, "answer").into_response();
    }
    p.seen.refused += 1;
    let pause = p.pause;
    let end = now + pause;
    if p.announced.is_none_or(|(_, to)| to < end) {
        p.announced = Some((now, end));
    }
    drop(p);
    refused(provider_refusal(&provider), pause)
}

fn provider_refusal(provider: &Shared) -> Refusal {
    provider.lock().unwrap().refusal
}

fn refused(refusal: Refusal, pause: Duration) -> Response {
    let secs = pause.as_secs().max(1).to_string();
    let millis = pause.as_millis().to_string();
    let (status, header, body) = match refusal {
        Refusal::RetryAfter => (429, ("retry-after", secs), String::from("slow down")),
        Refusal::RetryAfterMs => (429, ("retry-after-ms", millis), String::from("slow down")),
        Refusal::Overloaded => (
            529,
            ("retry-after", secs),
            String::from(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
        ),
        Refusal::RetryInfo => (
            429,
            ("x-none", String::new()),
            format!(
                r#"{{"error":{{"code":429,"status":"RESOURCE_EXHAUSTED","message":"slow","details":[{{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"{}.{:03}s"}}]}}}}"#,
                pause.as_secs(),
                pause.subsec_millis()
            ),
        ),
    };
    let mut response = (StatusCode::from_u16(status).unwrap(), body).into_response();
    response.headers_mut().insert(
        axum::http::HeaderName::from_static(header.0),
        HeaderValue::from_str(&header.1).unwrap(),
    );
    response
}

async fn serve(provider: Provider) -> (SocketAddr, Shared) {
    let shared = Arc::new(Mutex::new(provider));
    let app = Router::new()
        .fallback(answer)
        .with_state(Arc::clone(&shared));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, shared)
}

fn provider(rate: f64, pause: Duration, refusal: Refusal) -> Provider {
    let now = Instant::now();
    Provider {
        start: now,
        tokens: rate,
        filled: now,
        rate,
        pause,
        refusal,
        announced: None,
        out_until: None,
        seen: Seen::default(),
    }
}

/// `calls` calls arriving `every` apart, each a retry of `policy` on `upstream` against `addr`:
/// how many succeeded, and the give-ups.
async fn arrivals(
    addr: SocketAddr,
    start: Instant,
    upstream: Option<&'static Upstream>,
    policy: &'static Policy,
    calls: usize,
    every: Duration,
) -> (usize, Vec<retry_runtime::GaveUp<Failed>>) {
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/chat");
    let mut tasks = Vec::new();
    for n in 0..calls {
        let (client, url) = (client.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start + every * u32::try_from(n).unwrap()).await;
            let began = Instant::now();
            let send = |_| {
                let (client, url) = (client.clone(), url.clone());
                async move {
                    let sent = Instant::now().saturating_duration_since(start).as_nanos();
                    let response = client
                        .post(&url)
                        .header("x-sent-ns", sent.to_string())
                        .send()
                        .await?;
                    let response = response.check_status().await?;
                    Ok::<_, Failed>(response.status())
                }
            };
            let retry = Retry::new(policy);
            let outcome = match upstream {
                Some(upstream) => retry.upstream(upstream).run_fn(send).await,
                None => retry.run_fn(send).await,
            };
            (outcome, began.elapsed())
        }));
    }
    let mut ok = 0;
    let mut gave_up = Vec::new();
    let mut took = Duration::ZERO;
    for task in tasks {
        let (outcome, elapsed) = task.await.unwrap();
        took += elapsed;
        match outcome {
            Ok(_) => ok += 1,
            Err(failed) => gave_up.push(failed),
        }
    }
    eprintln!(
        "mean call: {:.2} s",
        took.as_secs_f64() / calls.max(1) as f64
    );
    (ok, gave_up)
}

/// A ladder generous enough for every call to outlast the provider's limit.
static PATIENT: Policy = Policy::AVAILABILITY
    .with_attempts(12)
    .with_max_total_wait(Duration::from_secs(60));

async fn a_shared_limit(refusal: Refusal, pause: Duration, upstream: &'static Upstream) -> Seen {
    let mut limited = provider(10.0, pause, refusal);
    limited.tokens = 10.0;
    let (addr, provider) = serve(limited).await;
    let start = provider.lock().unwrap().start;
    let (ok, gave_up) = arrivals(
        addr,
        start,
        Some(upstream),
        &PATIENT,
        60,
        Duration::from_millis(50),
    )
    .await;
    assert!(gave_up.is_empty(), "every call completes: {gave_up:?}");
    assert_eq!(ok, 60);
    upstream.reset();
    let seen = std::mem::take(&mut provider.lock().unwrap().seen);
    eprintln!("{} with the upstream: {seen:?}", upstream.name());
    seen
}

static KEY: Upstream = Upstream::new("key");
static KEY_MS: Upstream = Upstream::new("key-ms");
static KEY_529: Upstream = Upstream::new("key-529");
static KEY_INFO: Upstream = Upstream::new("key-info");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_is_sent_inside_a_pause_the_provider_announced_with_retry_after() {
    let seen = a_shared_limit(Refusal::RetryAfter, Duration::from_secs(1), &KEY).await;
    assert!(seen.refused > 0, "the limit was met: {seen:?}");
    assert_eq!(seen.inside_pause, 0, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_is_sent_inside_a_pause_announced_with_retry_after_ms() {
    let seen = a_shared_limit(Refusal::RetryAfterMs, Duration::from_millis(400), &KEY_MS).await;
    assert!(seen.refused > 0, "{seen:?}");
    assert_eq!(seen.inside_pause, 0, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_is_sent_inside_an_overloaded_pause() {
    let seen = a_shared_limit(Refusal::Overloaded, Duration::from_secs(1), &KEY_529).await;
    assert!(seen.refused > 0, "{seen:?}");
    assert_eq!(seen.inside_pause, 0, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_is_sent_inside_a_pause_announced_by_a_retry_info() {
    let seen = a_shared_limit(Refusal::RetryInfo, Duration::from_millis(400), &KEY_INFO).await;
    assert!(seen.refused > 0, "{seen:?}");
    assert_eq!(seen.inside_pause, 0, "{seen:?}");
}

/// Without the upstream, each call learns alone, and sends into a `Retry-After: 1` pause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_upstream_calls_send_inside_a_retry_after_pause() {
    let (addr, provider) = serve(provider(10.0, Duration::from_secs(1), Refusal::RetryAfter)).await;
    let start = provider.lock().unwrap().start;
    let (ok, _) = arrivals(addr, start, None, &PATIENT, 60, Duration::from_millis(50)).await;
    let seen = std::mem::take(&mut provider.lock().unwrap().seen);
    eprintln!("retry-after without an upstream: {seen:?}");
    assert!(ok > 0);
    assert!(seen.inside_pause > 0, "{seen:?}");
}

/// Without the upstream, each call learns alone, and sends into the pause: the measure above
/// can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_upstream_calls_send_inside_the_pause() {
    let (addr, provider) = serve(provider(
        10.0,
        Duration::from_millis(400),
        Refusal::RetryAfterMs,
    ))
    .await;
    let start = provider.lock().unwrap().start;
    let (ok, _) = arrivals(addr, start, None, &PATIENT, 60, Duration::from_millis(50)).await;
    let seen = std::mem::take(&mut provider.lock().unwrap().seen);
    eprintln!("retry-after-ms without an upstream: {seen:?}");
    assert!(ok > 0);
    assert!(seen.inside_pause > 0, "{seen:?}");
}

/// The ladder of the outage tests: 0.5, 1, 2, 4 s, without jitter.
static OUTLASTS: Policy = Policy::AVAILABILITY
    .with_attempts(5)
    .with_base(Duration::from_millis(500))
    .with_multiplier(2.0)
    .with_cap(Duration::from_secs(4))
    .with_jitter(retry_runtime::Jitter::None)
    .with_max_total_wait(Duration::from_secs(30));

static MODEL: Upstream = Upstream::new("model");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_an_outage_one_call_probes_while_the_others_wait() {
    let mut out = provider(1_000.0, Duration::ZERO, Refusal::RetryAfter);
    let outage = Duration::from_secs(3);
    out.out_until = Some(out.start + outage);
    let (addr, provider) = serve(out).await;
    let start = provider.lock().unwrap().start;
    let (ok, gave_up) = arrivals(
        addr,
        start,
        Some(&MODEL),
        &OUTLASTS,
        60,
        Duration::from_millis(50),
    )
    .await;
    MODEL.reset();
    let seen = std::mem::take(&mut provider.lock().unwrap().seen);
    eprintln!("the outage with the upstream: {seen:?}");
    assert!(
        gave_up.is_empty(),
        "every call outlasts the outage: {gave_up:?}"
    );
    assert_eq!(ok, 60);
    // The gate's threshold (3), one probe per rung of its ladder inside 3 s (at 0.5, 1.5 and
    // 3.5 s after it closed: the last after the outage), and the calls in flight when it closed.
    assert!(seen.during_outage <= 3 + 3 + 2, "{seen:?}");
}

/// Without the upstream, every call's ladder probes the dead server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_upstream_every_call_probes_the_outage() {
    let mut out = provider(1_000.0, Duration::ZERO, Refusal::RetryAfter);
    out.out_until = Some(out.start + Duration::from_secs(3));
    let (addr, provider) = serve(out).await;
    let start = provider.lock().unwrap().start;
    let (ok, gave_up) = arrivals(addr, start, None, &OUTLASTS, 60, Duration::from_millis(50)).await;
    let seen = std::mem::take(&mut provider.lock().unwrap().seen);
    eprintln!("the outage without an upstream: {seen:?}");
    assert!(gave_up.is_empty(), "{gave_up:?}");
    assert_eq!(ok, 60);
    assert!(seen.during_outage > 3 + 3 + 2, "{seen:?}");
}

static SHORT: Policy = Policy::AVAILABILITY
    .with_attempts(3)
    .with_base(Duration::from_millis(200))
    .with_multiplier(2.0)
    .with_jitter(retry_runtime::Jitter::None)
    .with_max_total_wait(Duration::from_millis(600));

static DOWN: Upstream = Upstream::new("down");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ladder_shorter_than_the_outage_gives_up_undetermined_at_its_own_end() {
    let mut out = provider(1_000.0, Duration::ZERO, Refusal::RetryAfter);
    out.out_until = Some(out.start + Duration::from_secs(3));
    let (addr, provider) = serve(out).await;
    let start = provider.lock().unwrap().start;
    let (ok, gave_up) = arrivals(
        addr,
        start,
        Some(&DOWN),
        &SHORT,
        20,
        Duration::from_millis(50),
    )
    .await;
    DOWN.reset();
    let seen = std::mem::take(&mut provider.lock().unwrap().seen);
    assert_eq!(ok, 0);
    assert_eq!(gave_up.len(), 20);
    for failed in &gave_up {
        // Undetermined, never an answer, and never before its own ladder's end: it waited
        // its allowance (600 ms), all but a last rung (at most 400 ms) that no longer fit.
        assert!(failed.is_undetermined(), "{failed:?}");
        assert!(
            matches!(
                failed.reason(),
                retry_runtime::StopReason::Exhausted { .. }
                    | retry_runtime::StopReason::Budget { .. }
                    | retry_runtime::StopReason::Held
            ),
            "{failed:?}"
        );
        assert!(failed.waited() >= Duration::from_millis(200), "{failed:?}");
    }
    assert!(
        seen.during_outage < 20 * 3,
        "the gate held calls back: {seen:?}"
    );
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

static KEY_TOWER: Upstream = Upstream::new("key-tower");

/// The same limit through the tower layer on an upstream: each request carries when it was
/// sent, and the layer's calls share the provider's pause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_tower_layer_no_request_is_sent_inside_an_announced_pause() {
    use tower::{Layer, Service, ServiceExt};
    let (addr, provider) = serve(provider(
        10.0,
        Duration::from_millis(400),
        Refusal::RetryAfterMs,
    ))
    .await;
    let start = provider.lock().unwrap().start;
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/chat");
    let inner = tower::service_fn(move |url: String| {
        let client = client.clone();
        async move {
            let sent = Instant::now().saturating_duration_since(start).as_nanos();
            let response = client
                .post(&url)
                .header("x-sent-ns", sent.to_string())
                .send()
                .await?;
            Ok::<_, BoxError>(response)
        }
    });
    let layer = retry_runtime::tower::RetryLayer::new(Retry::new(&PATIENT)).upstream(&KEY_TOWER);
    let service = layer.layer(inner);
    let mut tasks = Vec::new();
    for n in 0..60_u32 {
        let (mut service, url) = (service.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start + Duration::from_millis(50) * n).await;
            service.ready().await?.call(url).await
        }));
    }
    for task in tasks {
        let response = task.await.unwrap().expect("every call completes");
        assert_eq!(response.status(), 200);
    }
    KEY_TOWER.reset();
    let seen = std::mem::take(&mut provider.lock().unwrap().seen);
    eprintln!("through the tower layer with the upstream: {seen:?}");
    assert!(seen.refused > 0, "{seen:?}");
    assert_eq!(seen.inside_pause, 0, "{seen:?}");
}

static KEY_STREAM: Upstream = Upstream::new("key-stream");

/// Streams on an upstream: each open is admitted first, so none is sent into a pause another
/// stream was told of; every stream delivers its text once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_on_an_upstream_send_nothing_inside_an_announced_pause() {
    use futures_util::StreamExt;
    use retry_runtime::http::CallError;
    let (addr, provider) = serve(provider(
        10.0,
        Duration::from_millis(400),
        Refusal::RetryAfterMs,
    ))
    .await;
    let start = provider.lock().unwrap().start;
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/chat");
    let mut tasks = Vec::new();
    for n in 0..60_u32 {
        let (client, url) = (client.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start + Duration::from_millis(50) * n).await;
            let open = |_| {
                let (client, url) = (client.clone(), url.clone());
                async move {
                    let sent = Instant::now().saturating_duration_since(start).as_nanos();
                    let response = client
                        .post(&url)
                        .header("accept", "text/event-stream")
                        .header("x-sent-ns", sent.to_string())
                        .send()
                        .await?;
                    Ok::<_, CallError>(response.check_status().await?.events())
                }
            };
            let stream = Retry::new(&PATIENT)
                .upstream(&KEY_STREAM)
                .stream(open)
                .commit_when(retry_runtime::sse::is_content);
            let mut stream = std::pin::pin!(stream);
            let mut text = String::new();
            while let Some(event) = stream.next().await {
                text.push_str(&event?.text().unwrap_or_default());
            }
            Ok::<_, retry_runtime::GaveUp<CallError>>(text)
        }));
    }
    for task in tasks {
        assert_eq!(
            task.await.unwrap().expect("every stream completes"),
            "Hello"
        );
    }
    KEY_STREAM.reset();
    let seen = std::mem::take(&mut provider.lock().unwrap().seen);
    eprintln!("streams with the upstream: {seen:?}");
    assert!(seen.refused > 0, "{seen:?}");
    assert_eq!(seen.inside_pause, 0, "{seen:?}");
}
