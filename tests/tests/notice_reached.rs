//! A notice says how far the failed attempt got (issue 56, item 6): a call whose server sent
//! its `200` head and then cut the body answered; it is never told as a server that "could
//! not be reached". Against the fault server on 127.0.0.1, through reqwest.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use retry_runtime::http::{CallError, ResponseExt};
use retry_runtime::testing::{self, Act, FaultServer, Script};
use retry_runtime::{Classify, Policy, Retry, Turn};

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .expect("build a reqwest client")
}

/// The error of a service of one's own, as the guide writes it: the library's failures
/// wrapped, beside one's own.
#[derive(Debug, thiserror::Error, Classify)]
enum AgentError {
    #[error(transparent)]
    #[classify(from)]
    Http(#[from] retry_runtime::http::HttpError),
    #[error(transparent)]
    #[classify(from)]
    Request(#[from] reqwest::Error),
    #[error("the reply was empty")]
    #[classify(invalid_output)]
    Empty,
}

/// Run `call` (a GET of the server's reply) named `claude` in a turn, against a server that
/// plays `acts`, and return what the turn's hooks were told.
async fn told<E, F>(acts: Vec<Act>, call: F) -> Vec<String>
where
    E: Classify + std::fmt::Display,
    F: AsyncFn(reqwest::RequestBuilder) -> Result<String, E>,
{
    let server = FaultServer::start(Script::new(acts))
        .await
        .expect("start a fault server");
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let turn = Turn::new(Duration::from_secs(180))
        .on_notice(move |notice| sink.lock().unwrap().push(notice.to_string()));
    let http = client();
    let url = server.url();
    let retry = Retry::new(&Policy::AVAILABILITY).named("claude");
    let ((outcome, _), _) =
        testing::scope(turn.run(retry.run(async |_| call(http.get(&url)).await))).await;
    assert!(matches!(
        outcome,
        retry_runtime::turn::TurnOutcome::Finished(Ok(_))
    ));
    notices.lock().unwrap().clone()
}

#[tokio::test]
async fn a_200_head_then_a_cut_body_is_told_as_answered_then_cut_off() {
    let told = told(
        vec![Act::reset_mid_body(), Act::ok("reply")],
        async |request| -> Result<String, CallError> {
            Ok(request.send().await?.check_status().await?.text().await?)
        },
    )
    .await;
    assert_eq!(
        told,
        ["claude answered, then its response was cut off: retrying (2 of 4) in 250 ms"]
    );
}

#[tokio::test]
async fn a_cut_body_read_through_a_derived_error_is_told_the_same() {
    let told = told(
        vec![Act::reset_mid_body(), Act::ok("reply")],
        async |request| -> Result<String, AgentError> {
            let reply = request.send().await?.check_status().await?.text().await?;
            if reply.is_empty() {
                return Err(AgentError::Empty);
            }
            Ok(reply)
        },
    )
    .await;
    assert_eq!(
        told,
        ["claude answered, then its response was cut off: retrying (2 of 4) in 250 ms"]
    );
}

/// A refused connection is still one that could not be reached.
#[tokio::test]
async fn a_refused_connection_is_still_told_as_not_reached() {
    let told = told(
        vec![Act::refused(), Act::ok("reply")],
        async |request| -> Result<String, CallError> {
            Ok(request.send().await?.check_status().await?.text().await?)
        },
    )
    .await;
    assert_eq!(
        told,
        ["claude could not be reached: retrying (2 of 4) in 250 ms"]
    );
}

#[tokio::test]
async fn a_class_alone_is_still_told_by_its_class() {
    let told = told(
        vec![Act::unavailable(), Act::ok("reply")],
        async |request| -> Result<String, CallError> {
            Ok(request.send().await?.check_status().await?.text().await?)
        },
    )
    .await;
    assert_eq!(told, ["claude is unavailable: retrying (2 of 4) in 250 ms"]);
}
