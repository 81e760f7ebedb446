//! The pacing figures of BENCHMARKS.md, at the issue's scale: 120 callers arriving at 20 a
//! second on a key of 10 requests a second with a burst of 10 (`Retry-After: 1` on a refusal),
//! twice its limit; and a token limit of 4,500 a second with calls of 100 to 800 `max_tokens`.
//! Counted on the server. About two minutes of real time, so not run by default:
//!
//! ```sh
//! cargo test -p retry-tests --test pacing_acceptance -- --ignored --nocapture
//! ```

use std::sync::Arc;
use std::time::Duration;

use retry_runtime::http::ResponseExt;
use retry_runtime::{Policy, Retry, Upstream};
use retry_tests::provider::{HeaderForm, Key, Provider, Seen};
use retry_tests::upstream_headline::ModelError;

fn key(form: HeaderForm, retry_after: bool) -> Key {
    Key {
        requests_per_second: 10.0,
        request_burst: 10.0,
        tokens: None,
        form,
        retry_after: retry_after.then_some(Duration::from_secs(1)),
        latency: Duration::from_millis(5),
    }
}

/// One call of `max_tokens`, on `upstream` (paced, or its pause shared) or on its own ladder.
async fn one(
    upstream: Option<&'static Upstream>,
    http: reqwest::Client,
    url: String,
    max_tokens: u32,
) -> bool {
    let body = format!("{{\"max_tokens\":{max_tokens}}}");
    let attempt = move |_| {
        let (http, url, body) = (http.clone(), url.clone(), body.clone());
        async move {
            let response = http.post(&url).body(body).send().await?;
            Ok::<_, ModelError>(response.check_status().await?.text().await?)
        }
    };
    let retry = Retry::new(&Policy::AVAILABILITY);
    match upstream {
        Some(upstream) => {
            let paced = retry.upstream(upstream).tokens(max_tokens);
            paced.run_fn(attempt).await.is_ok()
        }
        None => retry.run_fn(attempt).await.is_ok(),
    }
}

/// 120 callers at 20 a second against `key`; what the server saw and how many calls failed.
async fn storm(key: &Key, upstream: Option<&'static Upstream>, tokens: bool) -> (Seen, u32) {
    let provider = Arc::new(Provider::start(key.clone()).await);
    let http = reqwest::Client::new();
    let mut calls = Vec::new();
    for n in 0..120_u32 {
        let max_tokens = if tokens { 100 + (n * 233) % 701 } else { 1 };
        calls.push(tokio::spawn(one(
            upstream,
            http.clone(),
            provider.url(),
            max_tokens,
        )));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut failed = 0;
    for call in calls {
        failed += u32::from(!call.await.expect("a call"));
    }
    (provider.seen(), failed)
}

fn row(name: &str, key: &Key, seen: &Seen, failed: u32, tokens: bool) {
    let throughput = match tokens {
        true => seen.token_throughput(key),
        false => seen.throughput(key),
    };
    println!(
        "| {name} | {} | {} | {throughput:.2} | {failed} |",
        seen.requests, seen.refused
    );
}

static TODAY: Upstream = Upstream::new("today");
static OPENAI: Upstream = Upstream::new("openai");
static ANTHROPIC: Upstream = Upstream::new("anthropic");
static TOKENS: Upstream = Upstream::new("tokens");
static SILENT: Upstream = Upstream::new("silent");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "two minutes of real time: the figures of BENCHMARKS.md"]
async fn the_pacing_figures() {
    println!("| 120 callers at 20/s, key 10/s | requests | refused | throughput | failed |");
    println!("|---|---:|---:|---:|---:|");
    let openai = key(HeaderForm::OpenAi, true);
    let (seen, failed) = storm(&openai, None, false).await;
    row(
        "each call its own ladder (OpenAI headers)",
        &openai,
        &seen,
        failed,
        false,
    );
    let quiet = key(HeaderForm::Silent, true);
    let (seen, failed) = storm(&quiet, Some(&TODAY), false).await;
    row(
        "one `Upstream`, no headers, `Retry-After` (the shared pause alone, as before)",
        &quiet,
        &seen,
        failed,
        false,
    );
    let (seen, failed) = storm(&openai, Some(&OPENAI), false).await;
    row(
        "one `Upstream`, OpenAI's headers: paced",
        &openai,
        &seen,
        failed,
        false,
    );
    let anthropic = key(HeaderForm::Anthropic, true);
    let (seen, failed) = storm(&anthropic, Some(&ANTHROPIC), false).await;
    row(
        "one `Upstream`, Anthropic's headers: paced",
        &anthropic,
        &seen,
        failed,
        false,
    );
    let bare = key(HeaderForm::Silent, false);
    let (seen, failed) = storm(&bare, None, false).await;
    row(
        "no headers, no hint: each call its own ladder",
        &bare,
        &seen,
        failed,
        false,
    );
    let (seen, failed) = storm(&bare, Some(&SILENT), false).await;
    row(
        "no headers, no hint: one `Upstream`, a rate learned",
        &bare,
        &seen,
        failed,
        false,
    );
    let tokens = Key {
        requests_per_second: 1_000.0,
        request_burst: 1_000.0,
        tokens: Some((4_500.0, 4_500.0)),
        ..openai.clone()
    };
    println!();
    println!(
        "| 120 callers at 20/s, 4,500 tokens/s, calls of 100-800 | requests | refused | token throughput | failed |"
    );
    println!("|---|---:|---:|---:|---:|");
    let (seen, failed) = storm(&tokens, None, true).await;
    row("each call its own ladder", &tokens, &seen, failed, true);
    let (seen, failed) = storm(&tokens, Some(&TOKENS), true).await;
    row(
        "one `Upstream`, `.tokens(max_tokens)`: paced",
        &tokens,
        &seen,
        failed,
        true,
    );
}
