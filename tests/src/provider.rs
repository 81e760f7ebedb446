//! A model provider on loopback that enforces its key's limits as buckets (requests, and
//! tokens by each request's `max_tokens`), says them in every answer's headers (OpenAI's form,
//! Anthropic's, or none) and counts on the server what it saw: requests, refusals, what it
//! served, per 100 ms. The pacing tests and the storm bench's picture run against it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// How a provider says its limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderForm {
    /// `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the reset a duration (`450ms`).
    OpenAi,
    /// `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`, the reset an RFC 3339
    /// instant.
    Anthropic,
    /// Nothing.
    Silent,
}

/// A key's limits, and how its provider answers.
#[derive(Debug, Clone)]
pub struct Key {
    /// Requests a second.
    pub requests_per_second: f64,
    /// The requests' bucket's size: the burst served at the start.
    pub request_burst: f64,
    /// Tokens a second and the bucket's size, if tokens are limited.
    pub tokens: Option<(f64, f64)>,
    /// How it says its limits.
    pub form: HeaderForm,
    /// Sent on a 429 (`retry-after` whole seconds, `retry-after-ms`); `None`: a bare 429.
    pub retry_after: Option<Duration>,
    /// How long a served request takes to answer, after it was counted.
    pub latency: Duration,
}

/// What the provider saw, counted on the server at each request's arrival.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// Requests in all.
    pub requests: u64,
    /// Requests answered 429.
    pub refused: u64,
    /// Requests served.
    pub served: u64,
    /// Tokens the served requests cost.
    pub tokens_served: u64,
    /// When the first request came, and the last.
    pub first: Option<Instant>,
    /// When the last request came.
    pub last: Option<Instant>,
    /// Requests and refusals in each 100 ms since the first request.
    pub per_100ms: Vec<(u32, u32)>,
}

impl Seen {
    /// What the key served past its starting burst, over what it could have served in the
    /// time from the first request to the last.
    pub fn throughput(&self, key: &Key) -> f64 {
        let could = key.requests_per_second * self.span();
        (self.served as f64 - key.request_burst) / could.max(f64::MIN_POSITIVE)
    }

    /// The same for tokens.
    pub fn token_throughput(&self, key: &Key) -> f64 {
        let Some((rate, burst)) = key.tokens else {
            return 0.0;
        };
        (self.tokens_served as f64 - burst) / (rate * self.span()).max(f64::MIN_POSITIVE)
    }

    fn span(&self) -> f64 {
        match (self.first, self.last) {
            (Some(first), Some(last)) => last.duration_since(first).as_secs_f64(),
            _ => 0.0,
        }
    }
}

/// One bucket: what it holds, refilled evenly.
#[derive(Debug)]
struct Bucket {
    rate: f64,
    size: f64,
    level: f64,
}

impl Bucket {
    fn new(rate: f64, size: f64) -> Bucket {
        Bucket {
            rate,
            size,
            level: size,
        }
    }

    fn refill(&mut self, elapsed: f64) {
        self.level = (self.level + elapsed * self.rate).min(self.size);
    }

    /// Until it is full again.
    fn to_full(&self) -> Duration {
        Duration::from_secs_f64(((self.size - self.level) / self.rate).max(0.0))
    }
}

#[derive(Debug)]
struct Kept {
    key: Key,
    requests: Bucket,
    tokens: Option<Bucket>,
    filled: Instant,
    seen: Seen,
}

/// A provider on 127.0.0.1, stopped when dropped.
#[derive(Debug)]
pub struct Provider {
    addr: SocketAddr,
    kept: Arc<Mutex<Kept>>,
    server: tokio::task::JoinHandle<()>,
}

impl Provider {
    /// Start one for `key`, its buckets full.
    pub async fn start(key: Key) -> Provider {
        let kept = Arc::new(Mutex::new(Kept {
            requests: Bucket::new(key.requests_per_second, key.request_burst),
            tokens: key.tokens.map(|(rate, size)| Bucket::new(rate, size)),
            key,
            filled: Instant::now(),
            seen: Seen::default(),
        }));
        let app = Router::new().fallback(answer).with_state(Arc::clone(&kept));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let addr = listener.local_addr().expect("an address");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Provider { addr, kept, server }
    }

    /// Its chat completions URL.
    pub fn url(&self) -> String {
        format!("http://{}/v1/chat/completions", self.addr)
    }

    /// What it saw so far.
    pub fn seen(&self) -> Seen {
        self.kept.lock().expect("the provider's state").seen.clone()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// A request's cost in tokens: its `max_tokens` (or `max_completion_tokens`), as OpenAI
/// reserves it.
fn cost(body: &[u8]) -> f64 {
    let Ok(request) = serde_json::from_slice::<serde_json::Value>(body) else {
        return 0.0;
    };
    ["max_tokens", "max_completion_tokens"]
        .into_iter()
        .find_map(|name| request.get(name).and_then(serde_json::Value::as_u64))
        .unwrap_or(0) as f64
}

async fn answer(State(kept): State<Arc<Mutex<Kept>>>, body: Bytes) -> Response {
    let cost = cost(&body);
    let (served, headers, latency, retry_after) = {
        let mut kept = kept.lock().expect("the provider's state");
        let now = Instant::now();
        let elapsed = now.duration_since(kept.filled).as_secs_f64();
        kept.filled = now;
        kept.requests.refill(elapsed);
        if let Some(tokens) = &mut kept.tokens {
            tokens.refill(elapsed);
        }
        let fits = kept.requests.level >= 1.0
            && kept
                .tokens
                .as_ref()
                .is_none_or(|tokens| tokens.level >= cost);
        if fits {
            kept.requests.level -= 1.0;
            if let Some(tokens) = &mut kept.tokens {
                tokens.level -= cost;
            }
        }
        let first = *kept.seen.first.get_or_insert(now);
        kept.seen.last = Some(now);
        let slot = (now.duration_since(first).as_millis() / 100) as usize;
        let seen = &mut kept.seen;
        if seen.per_100ms.len() <= slot {
            seen.per_100ms.resize(slot + 1, (0, 0));
        }
        seen.per_100ms[slot].0 += 1;
        seen.requests += 1;
        if fits {
            seen.served += 1;
            seen.tokens_served += cost as u64;
        } else {
            seen.refused += 1;
            seen.per_100ms[slot].1 += 1;
        }
        (fits, said(&kept), kept.key.latency, kept.key.retry_after)
    };
    if served {
        tokio::time::sleep(latency).await;
        let body = r#"{"choices":[{"message":{"role":"assistant","content":"ok"}}]}"#;
        return (StatusCode::OK, headers, body).into_response();
    }
    let mut headers = headers;
    if let Some(after) = retry_after {
        let seconds = after.as_secs() + u64::from(after.subsec_nanos() > 0);
        headers.insert("retry-after", HeaderValue::from(seconds));
        headers.insert(
            "retry-after-ms",
            HeaderValue::from(after.as_millis() as u64),
        );
    }
    let body = r#"{"error":{"type":"rate_limit_exceeded","message":"Rate limit reached"}}"#;
    (StatusCode::TOO_MANY_REQUESTS, headers, body).into_response()
}

/// The key's limits as its form says them, now.
fn said(kept: &Kept) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut say = |kind: &str, bucket: &Bucket| match kept.key.form {
        HeaderForm::OpenAi => {
            let name = |field: &str| format!("x-ratelimit-{field}-{kind}");
            put(
                &mut headers,
                &name("limit"),
                bucket.size.floor().to_string(),
            );
            put(
                &mut headers,
                &name("remaining"),
                bucket.level.max(0.0).floor().to_string(),
            );
            put(&mut headers, &name("reset"), go_duration(bucket.to_full()));
        }
        HeaderForm::Anthropic => {
            let name = |field: &str| format!("anthropic-ratelimit-{kind}-{field}");
            put(
                &mut headers,
                &name("limit"),
                bucket.size.floor().to_string(),
            );
            put(
                &mut headers,
                &name("remaining"),
                bucket.level.max(0.0).floor().to_string(),
            );
            let at = SystemTime::now() + bucket.to_full();
            put(&mut headers, &name("reset"), rfc3339(at));
        }
        HeaderForm::Silent => {}
    };
    say("requests", &kept.requests);
    if let Some(tokens) = &kept.tokens {
        say("tokens", tokens);
    }
    headers
}

fn put(headers: &mut HeaderMap, name: &str, value: String) {
    if let (Ok(name), Ok(value)) = (
        axum::http::HeaderName::try_from(name),
        HeaderValue::try_from(value),
    ) {
        headers.insert(name, value);
    }
}

/// A duration as OpenAI writes it: `450ms` below a second, `1.25s` above.
fn go_duration(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        format!("{}ms", duration.as_millis())
    } else {
        format!("{:.3}s", duration.as_secs_f64())
    }
}

/// An instant in RFC 3339, UTC, with milliseconds: `2026-12-05T04:10:31.250Z`.
fn rfc3339(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since.as_secs() as i64;
    let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let of_era = z - era * 146_097;
    let year_of_era = (of_era - of_era / 1_460 + of_era / 36_524 - of_era / 146_096) / 365;
    let day_of_year = of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60,
        since.subsec_millis()
    )
}
