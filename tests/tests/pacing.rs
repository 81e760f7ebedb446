//! Pacing, on the path a user takes: `#[retry(upstream = KEY)]` and `check_status()` against a
//! provider of our own on loopback (`retry_tests::provider`), which enforces its key's limit as
//! a bucket, sends its limits in each answer's headers (OpenAI's form, Anthropic's, or none)
//! and counts on the server what it saw: requests, refusals, what it served.

use std::sync::Arc;
use std::time::Duration;

use retry_runtime::http::ResponseExt;
use retry_runtime::{Class, Classify, PausedBy, Upstream, retry};
use retry_tests::provider::{HeaderForm, Key, Provider};
use retry_tests::upstream_headline::ModelError;

/// A key of 10 requests a second, a burst of 5.
fn key(form: HeaderForm) -> Key {
    Key {
        requests_per_second: 10.0,
        request_burst: 5.0,
        tokens: None,
        form,
        retry_after: Some(Duration::from_secs(1)),
        latency: Duration::from_millis(5),
    }
}

/// `callers` calls arriving `every` apart, each `call`ed; how many failed.
async fn arrivals<F, Fut>(callers: u32, every: Duration, call: F) -> u32
where
    F: Fn(u32) -> Fut,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    let mut tasks = Vec::new();
    for n in 0..callers {
        tasks.push(tokio::spawn(call(n)));
        tokio::time::sleep(every).await;
    }
    let mut failed = 0;
    for task in tasks {
        failed += u32::from(!task.await.expect("a call"));
    }
    failed
}

static OPENAI: Upstream = Upstream::new("openai-key");

#[retry(policy = "availability", attempts = 12, upstream = OPENAI)]
async fn on_openai(http: &reqwest::Client, url: &str) -> Result<String, ModelError> {
    let response = http.post(url).body("{\"max_tokens\":1}").send().await?;
    Ok(response.check_status().await?.text().await?)
}

/// OpenAI's headers (`x-ratelimit-*-requests`, durations like `450ms`): 40 callers at twice
/// the key's rate, paced from the first answer on. At most one refusal (before the first
/// answer, nothing is known), the key kept busy, no call failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_headers_pace_calls_to_the_keys_limit() {
    let key = key(HeaderForm::OpenAi);
    let provider = Arc::new(Provider::start(key.clone()).await);
    let http = reqwest::Client::new();
    let failed = arrivals(40, Duration::from_millis(50), |_| {
        let (http, url) = (http.clone(), provider.url());
        async move { on_openai(&http, &url).await.is_ok() }
    })
    .await;
    let seen = provider.seen();
    eprintln!("openai: {seen:?}");
    assert_eq!(failed, 0);
    assert!(seen.refused <= 1, "{seen:?}");
    assert!(seen.throughput(&key) >= 0.9, "{}", seen.throughput(&key));
}

static ANTHROPIC: Upstream = Upstream::new("anthropic-key");

#[retry(policy = "availability", attempts = 12, upstream = ANTHROPIC)]
async fn on_anthropic(http: &reqwest::Client, url: &str) -> Result<String, ModelError> {
    let response = http.post(url).body("{\"max_tokens\":1}").send().await?;
    Ok(response.check_status().await?.text().await?)
}

/// Anthropic's headers (`anthropic-ratelimit-requests-*`, an RFC 3339 instant for the reset):
/// the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_headers_pace_calls_to_the_keys_limit() {
    let key = key(HeaderForm::Anthropic);
    let provider = Arc::new(Provider::start(key.clone()).await);
    let http = reqwest::Client::new();
    let failed = arrivals(40, Duration::from_millis(50), |_| {
        let (http, url) = (http.clone(), provider.url());
        async move { on_anthropic(&http, &url).await.is_ok() }
    })
    .await;
    let seen = provider.seen();
    eprintln!("anthropic: {seen:?}");
    assert_eq!(failed, 0);
    assert!(seen.refused <= 1, "{seen:?}");
    assert!(seen.throughput(&key) >= 0.9, "{}", seen.throughput(&key));
}

static TOKENS: Upstream = Upstream::new("token-key");

/// Each call declares its cost: its `max_tokens` (the provider counts that, as OpenAI's
/// reservation does).
#[retry(policy = "availability", attempts = 12, upstream = TOKENS, tokens = max_tokens)]
async fn with_tokens(
    http: &reqwest::Client,
    url: &str,
    max_tokens: u32,
) -> Result<String, ModelError> {
    let body = format!("{{\"max_tokens\":{max_tokens}}}");
    let response = http.post(url).body(body).send().await?;
    Ok(response.check_status().await?.text().await?)
}

/// A token limit (1,500 a second, calls of 100 to 800): each call reserves its tokens at send,
/// and the next answer's headers correct what is left. At most two refusals, the tokens kept
/// busy, no call failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_reserved_at_send_and_corrected_by_the_headers() {
    let key = Key {
        requests_per_second: 100.0,
        request_burst: 100.0,
        tokens: Some((1_500.0, 1_500.0)),
        ..key(HeaderForm::OpenAi)
    };
    let provider = Arc::new(Provider::start(key.clone()).await);
    let http = reqwest::Client::new();
    let failed = arrivals(30, Duration::from_millis(50), |n| {
        let (http, url) = (http.clone(), provider.url());
        let max_tokens = 100 + (n * 233) % 701;
        async move { with_tokens(&http, &url, max_tokens).await.is_ok() }
    })
    .await;
    let seen = provider.seen();
    eprintln!("tokens: {seen:?}");
    assert_eq!(failed, 0);
    assert!(seen.refused <= 2, "{seen:?}");
    let throughput = seen.token_throughput(&key);
    assert!(throughput >= 0.85, "{throughput}");
}

/// A call that costs more than the key's whole token limit fails at once, an answer, and is
/// never sent: once the key's limit is known, the server sees no request for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_larger_than_the_limit_fails_at_once_as_an_answer() {
    let key = Key {
        requests_per_second: 100.0,
        request_burst: 100.0,
        tokens: Some((1_000.0, 1_000.0)),
        ..key(HeaderForm::OpenAi)
    };
    let provider = Provider::start(key).await;
    let http = reqwest::Client::new();
    // The first answer says the limit.
    with_tokens(&http, &provider.url(), 10)
        .await
        .expect("a small call");
    let before = provider.seen().requests;
    let began = std::time::Instant::now();
    let failed = with_tokens(&http, &provider.url(), 5_000)
        .await
        .unwrap_err();
    assert_eq!(provider.seen().requests, before, "never sent");
    assert_eq!(failed.classify(), Class::Definitive);
    let ModelError::Paused(paused) = &failed else {
        panic!("{failed:?}");
    };
    assert_eq!(paused.reason(), PausedBy::OverLimit);
    assert!(failed.to_string().contains("whole rate limit"), "{failed}");
    // At once: no wait of any length (a generous bound on a loaded machine).
    assert!(began.elapsed() < Duration::from_secs(1));
}

static SILENT: Upstream = Upstream::new("silent-key");

#[retry(policy = "availability", attempts = 12, upstream = SILENT)]
async fn on_silent(http: &reqwest::Client, url: &str) -> Result<String, ModelError> {
    let response = http.post(url).body("{\"max_tokens\":1}").send().await?;
    Ok(response.check_status().await?.text().await?)
}

/// A key that says nothing (no headers, a bare 429): a rate is learned from its refusals, so
/// that far fewer are sent than one per call over the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_says_nothing_is_held_near_its_rate() {
    let key = Key {
        retry_after: None,
        ..key(HeaderForm::Silent)
    };
    let provider = Arc::new(Provider::start(key.clone()).await);
    let http = reqwest::Client::new();
    let failed = arrivals(60, Duration::from_millis(50), |_| {
        let (http, url) = (http.clone(), provider.url());
        async move { on_silent(&http, &url).await.is_ok() }
    })
    .await;
    let seen = provider.seen();
    eprintln!("silent: {seen:?}");
    assert_eq!(failed, 0);
    // Each call on its own ladder would draw more than one refusal per call over the limit.
    assert!(seen.refused <= 15, "{seen:?}");
    assert!(seen.throughput(&key) >= 0.7, "{}", seen.throughput(&key));
}
