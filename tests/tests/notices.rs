//! Issue 4: every retry is a tracing event and a hook call while it happens, and every give-up
//! one more, with its reason.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use retry_runtime::notice::Action;
use retry_runtime::{Class, Policy, Retry, StopReason, Turn, notice, testing};
use retry_tests::capture::{Capture, Fields};

#[derive(Debug)]
struct Status(u16);

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}", self.0)
    }
}

impl retry_runtime::Classify for Status {
    fn classify(&self) -> Class {
        match self.0 {
            502..=504 => Class::Unavailable { retry_after: None },
            _ => Class::Definitive,
        }
    }
}

/// Three 503s, then a reply: a three-retry ladder.
async fn three_retries_then_success() -> Result<&'static str, retry_runtime::GaveUp<Status>> {
    Retry::new(&Policy::AVAILABILITY)
        .named("model")
        .run(async |attempt| {
            if attempt <= 3 {
                Err(Status(503))
            } else {
                Ok("reply")
            }
        })
        .await
}

fn expected_retry(attempt: u32, backoff_ms: u64) -> Fields {
    [
        ("level", "INFO".to_owned()),
        ("op", "model".to_owned()),
        ("attempt", attempt.to_string()),
        ("total", "4".to_owned()),
        ("backoff_ms", backoff_ms.to_string()),
        ("class", "unavailable".to_owned()),
        ("error", "HTTP 503".to_owned()),
        (
            "message",
            format!(
                "model is unavailable: retrying ({} of 4) in {backoff_ms} ms",
                attempt + 1
            ),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn each_retry_is_a_tracing_event_with_op_attempt_total_backoff_class_and_error() {
    let capture = Capture::default();
    let _guard = capture.install();

    let (result, _) = testing::scope(three_retries_then_success()).await;

    assert_eq!(result.unwrap(), "reply");
    assert_eq!(
        capture.events(),
        [
            expected_retry(1, 250),
            expected_retry(2, 500),
            expected_retry(3, 1000)
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_give_up_is_one_more_event_with_its_reason() {
    let capture = Capture::default();
    let _guard = capture.install();

    let (result, _) = testing::scope(
        Retry::new(&Policy::AVAILABILITY)
            .named("model")
            .run(async |_| Err::<(), _>(Status(503))),
    )
    .await;

    assert_eq!(result.unwrap_err().attempts(), 4);
    let events = capture.events();
    assert_eq!(
        events.len(),
        4,
        "three retries and one give-up: {events:#?}"
    );
    let give_up = &events[3];
    assert_eq!(give_up["level"], "WARN");
    assert_eq!(give_up["reason"], "exhausted");
    assert_eq!(give_up["attempt"], "4");
    assert_eq!(give_up["class"], "unavailable");
    assert_eq!(
        give_up["message"],
        "model is unavailable: gave up after 4 of 4 attempts: all 4 attempts failed; the outcome is unknown"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_is_reported_once_as_given_up_and_never_as_a_retry() {
    let capture = Capture::default();
    let _guard = capture.install();

    let (result, _) = testing::scope(
        Retry::new(&Policy::AVAILABILITY)
            .named("model")
            .run(async |_| Err::<(), _>(Status(400))),
    )
    .await;

    assert_eq!(result.unwrap_err().reason(), StopReason::Definitive);
    let events = capture.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["reason"], "definitive");
}

#[tokio::test(flavor = "current_thread")]
async fn the_turn_hook_sees_the_same_events_in_order() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let turn = Turn::new(Duration::from_secs(180)).on_notice(move |notice| {
        let Some(event) = notice.retry() else {
            return;
        };
        let backoff = match event.action {
            Action::Retry { backoff } => backoff,
            _ => Duration::ZERO,
        };
        sink.lock().unwrap().push((
            event.op.to_owned(),
            event.attempt,
            event.total,
            backoff,
            event.class,
            event.error.to_string(),
        ));
    });

    let ((result, _), _) = testing::scope(turn.run(three_retries_then_success())).await;

    assert_eq!(result.unwrap().unwrap(), "reply");
    let ms = Duration::from_millis;
    let error = || "HTTP 503".to_owned();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                "model".to_owned(),
                1,
                4,
                ms(250),
                Class::Unavailable { retry_after: None },
                error()
            ),
            (
                "model".to_owned(),
                2,
                4,
                ms(500),
                Class::Unavailable { retry_after: None },
                error()
            ),
            (
                "model".to_owned(),
                3,
                4,
                ms(1000),
                Class::Unavailable { retry_after: None },
                error()
            ),
        ]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_panicking_hook_does_not_break_the_call() {
    let turn =
        Turn::new(Duration::from_secs(180)).on_notice(|_| panic!("the harness's hook is broken"));

    let ((result, report), recorded) = testing::scope(turn.run(three_retries_then_success())).await;

    assert_eq!(result.unwrap().unwrap(), "reply");
    assert_eq!(report.attempts(), 4);
    assert_eq!(recorded.waits().len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn the_process_hook_receives_events_outside_any_turn() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    // Other tests in this binary also emit events: keep only this test's operation.
    notice::set_process_hook(move |notice| {
        if notice
            .retry()
            .is_some_and(|event| event.op == "process-hook-test")
        {
            sink.lock().unwrap().push(notice.to_string());
        }
    });

    let (result, _) = testing::scope(
        Retry::new(&Policy::AVAILABILITY)
            .named("process-hook-test")
            .run(async |attempt| {
                if attempt == 1 {
                    Err(Status(502))
                } else {
                    Ok(())
                }
            }),
    )
    .await;
    notice::clear_process_hook();

    result.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        ["process-hook-test is unavailable: retrying (2 of 4) in 250 ms"]
    );
}
