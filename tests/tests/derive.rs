//! `#[derive(Classify)]` in use: a thiserror enum that delegates to the errors it wraps, hints
//! that reach the ladder, structs and generics, and a model client classified by the derive and
//! retried by `#[retry]` against a real server on 127.0.0.1, where the server counts the
//! attempts each variant gets. Waits are recorded by `testing::scope`, never slept.

use std::io;
use std::time::Duration;

use retry_runtime::TimedOut;
use retry_runtime::http::{HttpError, ResponseExt};
use retry_runtime::{Class, Classify, Policy, Retry, retry, testing};
use retry_tests::{Server, Step};

/// What a model call can fail with: each variant's class is written on it.
#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    /// No answer: classified as `reqwest` says (refused, reset, dropped: `Transport`).
    #[error("no answer: {0}")]
    #[classify(from)]
    Transport(#[from] reqwest::Error),
    /// A status: classified by the status and its headers (503 `Unavailable`, 429
    /// `RateLimited` with its `Retry-After`, ...).
    #[error(transparent)]
    #[classify(from)]
    Http(#[from] HttpError),
    /// The attempt's own time ran out.
    #[error(transparent)]
    #[classify(from)]
    TimedOut(#[from] TimedOut),
    /// The server said the request is wrong: the same request gets the same answer.
    #[error("bad request: {0}")]
    #[classify(definitive)]
    BadRequest(String),
    /// The account's budget is spent: no backoff outlasts it.
    #[error("the budget is spent")]
    #[classify(quota_exhausted)]
    BudgetRefused,
    /// The model answered with tool arguments that do not parse: a new try may do better.
    #[error("invalid tool arguments: {0}")]
    #[classify(invalid_output)]
    InvalidToolArguments(String),
}

/// A struct takes its decision on the type.
#[derive(Debug, thiserror::Error, Classify)]
#[error("the stream stalled")]
#[classify(timeout)]
struct Stalled;

/// A `reqwest` client with its own retries off and no idle connections, as the shared
/// `Client` is, so each attempt is one request the server counts.
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .retry(reqwest::retry::never())
        .build()
        .expect("build a reqwest client")
}

/// One model call: a 2xx body must be a whole JSON object (the tool's arguments; checked by
/// its braces, which is enough for this server), a 400 is a bad
/// request, a 402 a budget refusal, any other failed status the library's `HttpError`.
/// Each attempt has 5 s: one that runs out is the library's `TimedOut`, which the enum holds.
#[retry(attempts = 4, base_ms = 250, also_retry = [InvalidOutput], timeout = "5s")]
async fn complete(http: &reqwest::Client, url: &str) -> Result<String, ModelError> {
    let response = http.get(url).send().await?;
    match response.status().as_u16() {
        400 => return Err(ModelError::BadRequest(response.text().await?)),
        402 => return Err(ModelError::BudgetRefused),
        _ => {}
    }
    let response = response.check_status().await?;
    let body = response.text().await?;
    let body_text = body.trim();
    if body_text.starts_with('{') && body_text.ends_with('}') {
        Ok(body)
    } else {
        Err(ModelError::InvalidToolArguments(body))
    }
}

/// Runs `complete` against a server answering `script`, waits recorded; the result, the
/// requests the server saw, and the waits.
async fn against(script: Vec<Step>) -> (Result<String, ModelError>, u32, Vec<Duration>) {
    let server = Server::start(script).await;
    let http = http();
    let url = server.url();
    let (result, recorded) = testing::scope(server.time_out(complete(&http, &url))).await;
    (result, server.requests(), recorded.waits().to_vec())
}

#[tokio::test(flavor = "current_thread")]
async fn a_dropped_connection_is_transport_and_retried_to_the_end() {
    let (result, requests, waits) = against(Step::Drop.times(4)).await;
    let error = result.unwrap_err();
    assert!(matches!(error, ModelError::Transport(_)), "{error:?}");
    assert_eq!(error.classify(), Class::Transport);
    assert_eq!(requests, 4);
    assert_eq!(waits, [250, 500, 1000].map(Duration::from_millis));
}

#[tokio::test(flavor = "current_thread")]
async fn a_503_is_retried_until_an_answer() {
    let script = [Step::status(503), Step::status(503), Step::ok("{}")];
    let (result, requests, _) = against(script.to_vec()).await;
    assert_eq!(result.unwrap(), "{}");
    assert_eq!(requests, 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_429_hint_reaches_the_ladder_through_the_delegated_error() {
    let script = [Step::rate_limited_for(3), Step::ok("{}")];
    let (result, requests, waits) = against(script.to_vec()).await;
    assert_eq!(result.unwrap(), "{}");
    assert_eq!(requests, 2);
    // The hint is a floor under the ladder's 250 ms.
    assert_eq!(waits.len(), 1);
    assert!(waits[0] >= Duration::from_secs(3), "{waits:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_timeout_is_one_attempt_under_availability() {
    let (result, requests, waits) = against(vec![Step::Stall, Step::ok("{}")]).await;
    let error = result.unwrap_err();
    assert!(matches!(error, ModelError::TimedOut(_)), "{error:?}");
    assert_eq!(error.classify(), Class::Timeout);
    assert_eq!(requests, 1);
    assert_eq!(waits, []);
}

#[tokio::test(flavor = "current_thread")]
async fn a_bad_request_is_an_answer() {
    let script = [Step::status(400).with_body("unknown model"), Step::ok("{}")];
    let (result, requests, waits) = against(script.to_vec()).await;
    let error = result.unwrap_err();
    assert!(
        matches!(&error, ModelError::BadRequest(body) if body == "unknown model"),
        "{error:?}"
    );
    assert_eq!(error.classify(), Class::Definitive);
    assert_eq!((requests, waits.len()), (1, 0));
}

#[tokio::test(flavor = "current_thread")]
async fn a_budget_refusal_is_not_waited_on() {
    let (result, requests, waits) = against(vec![Step::status(402), Step::ok("{}")]).await;
    let error = result.unwrap_err();
    assert_eq!(error.classify(), Class::QuotaExhausted);
    assert_eq!((requests, waits.len()), (1, 0));
}

#[tokio::test(flavor = "current_thread")]
async fn invalid_tool_arguments_get_one_more_try_where_the_call_opts_in() {
    let script = [Step::ok("{\"city\": "), Step::ok("{\"city\": \"Oslo\"}")];
    let (result, requests, waits) = against(script.to_vec()).await;
    assert_eq!(result.unwrap(), "{\"city\": \"Oslo\"}");
    assert_eq!(requests, 2);
    assert_eq!(waits, [Duration::from_millis(250)]);
}

/// A thiserror enum whose `#[from] std::io::Error` variant classifies as the I/O error does,
/// and whose 503-like variant carries its own hint.
#[derive(Debug, thiserror::Error, Classify)]
enum StoreError {
    #[error(transparent)]
    #[classify(from)]
    Io(#[from] io::Error),
    #[error("overloaded")]
    #[classify(unavailable)]
    Overloaded {
        #[classify(retry_after)]
        retry_after: Option<Duration>,
    },
    #[error("not found")]
    #[classify(definitive)]
    NotFound,
}

#[test]
fn io_errors_classify_as_std_does_through_from() {
    let io = |kind: io::ErrorKind| StoreError::from(io::Error::from(kind)).classify();
    assert_eq!(io(io::ErrorKind::ConnectionReset), Class::Transport);
    assert_eq!(io(io::ErrorKind::TimedOut), Class::Timeout);
    assert_eq!(io(io::ErrorKind::PermissionDenied), Class::Definitive);
    assert_eq!(StoreError::NotFound.classify(), Class::Definitive);
}

#[tokio::test(flavor = "current_thread")]
async fn a_hint_on_a_variant_is_a_floor_under_the_ladder() {
    let hint = Some(Duration::from_secs(3));
    let (result, recorded) = testing::scope(Retry::new(&Policy::AVAILABILITY).run(
        async |attempt| match attempt {
            1 => Err(StoreError::Overloaded { retry_after: hint }),
            _ => Ok(attempt),
        },
    ))
    .await;
    assert_eq!(result.unwrap(), 2);
    assert_eq!(recorded.waits().len(), 1);
    assert!(
        recorded.waits()[0] >= Duration::from_secs(3),
        "{:?}",
        recorded.waits()
    );

    // No hint: the ladder's own first wait.
    let (_, recorded) =
        testing::scope(
            Retry::new(&Policy::AVAILABILITY).run(async |attempt| match attempt {
                1 => Err(StoreError::Overloaded { retry_after: None }),
                _ => Ok(attempt),
            }),
        )
        .await;
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
}

/// Generic: the delegated field's type is a parameter, and the impl is bounded on it.
#[derive(Debug, thiserror::Error, Classify)]
enum Layered<E: std::error::Error + 'static> {
    #[error(transparent)]
    #[classify(from)]
    Inner(#[from] E),
    #[error("refused")]
    #[classify(quota_exhausted)]
    Refused,
}

#[test]
fn a_generic_enum_delegates_to_its_parameter() {
    let timed_out: Layered<Stalled> = Layered::from(Stalled);
    assert_eq!(timed_out.classify(), Class::Timeout);
    let io: Layered<io::Error> = Layered::from(io::Error::from(io::ErrorKind::BrokenPipe));
    assert_eq!(io.classify(), Class::Transport);
    assert_eq!(
        Layered::<io::Error>::Refused.classify(),
        Class::QuotaExhausted
    );
}
