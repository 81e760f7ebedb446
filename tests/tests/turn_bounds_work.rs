//! Issue 8: nothing outlives its budget. A turn drops the work in flight at its deadline or on
//! cancel, and each attempt can have its own `timeout`.
//!
//! The tests against a server use short real durations, not tokio's paused clock: a paused
//! clock jumps to the next timer whenever the runtime waits on a socket, so a deadline would
//! fire before the request even reached the server. Upper bounds are asserted with a second of
//! slack; what matters is the order of events and the outcome. The tests without a socket
//! use the paused clock.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use retry_runtime::TimeoutBound;
use retry_runtime::turn::{CutWait, InFlight};
use retry_runtime::{
    BoxSleep, Class, Classify, Clock, Draw, Policy, Quota, Retry, TimedOut, Turn, retry,
};
use retry_tests::{CallError as ClientError, Client, Reply, Server, Step};
use tokio::time::Instant;

/// The slack on every real-time upper bound.
const SLACK: Duration = Duration::from_secs(1);

/// A caller's error with room for a timed-out attempt.
#[derive(Debug)]
enum CallError {
    Http(ClientError),
    TimedOut(TimedOut),
}

impl From<ClientError> for CallError {
    fn from(error: ClientError) -> Self {
        CallError::Http(error)
    }
}

impl From<TimedOut> for CallError {
    fn from(timed_out: TimedOut) -> Self {
        CallError::TimedOut(timed_out)
    }
}

impl Classify for CallError {
    fn classify(&self) -> Class {
        match self {
            CallError::Http(error) => error.classify(),
            CallError::TimedOut(timed_out) => timed_out.classify(),
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Http(error) => error.fmt(f),
            CallError::TimedOut(timed_out) => timed_out.fmt(f),
        }
    }
}

#[retry(policy = "transient", attempts = 3, base_ms = 10, timeout = "300ms")]
async fn transient_within_300ms(client: &Client) -> Result<Reply, CallError> {
    Ok(client.get().await?)
}

#[retry(policy = "outage", timeout = "300ms")]
async fn outage_within_300ms(client: &Client) -> Result<Reply, CallError> {
    Ok(client.get().await?)
}

/// Sets its flag when dropped: proof that an attempt's future was dropped, and when.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn assert_within(elapsed: Duration, at_least: Duration) {
    assert!(
        elapsed >= at_least && elapsed <= at_least + SLACK,
        "{elapsed:?}, expected {at_least:?} to {:?}",
        at_least + SLACK
    );
}

#[tokio::test]
async fn a_hung_call_ends_with_its_turn_and_nothing_of_it_runs_on() {
    let server = Server::start([Step::Stall]).await;
    let client = server.client();
    let dropped = Arc::new(AtomicBool::new(false));
    let resumed = Arc::new(AtomicBool::new(false));
    let turn_budget = Duration::from_millis(1500);

    let started = Instant::now();
    let (outcome, report) = Turn::new(turn_budget)
        .run(
            Retry::new(&Policy::AVAILABILITY)
                .named("model")
                .run(async |_| {
                    let _flag = DropFlag(Arc::clone(&dropped));
                    let reply = client.get().await;
                    resumed.store(true, Ordering::SeqCst);
                    reply
                }),
        )
        .await;
    let elapsed = started.elapsed();

    // Dropped before `run` returned, and never resumed.
    assert!(dropped.load(Ordering::SeqCst));
    assert!(!resumed.load(Ordering::SeqCst));
    assert!(outcome.is_expired());
    assert_within(elapsed, turn_budget);
    let in_flight: Vec<_> = report
        .in_flight()
        .iter()
        .map(|call: &InFlight| (call.op.as_str(), call.attempt))
        .collect();
    assert_eq!(in_flight, [("model", 1)]);
    assert!(report.in_flight()[0].running >= turn_budget - Duration::from_millis(50));
    assert_eq!(report.attempts(), server.requests());
}

#[tokio::test]
async fn a_hung_call_dropped_by_its_turn_closes_its_connection() {
    let server = Server::start([Step::Stall]).await;
    let client = server.client();

    let (outcome, _) = Turn::new(Duration::from_millis(1500))
        .run(Retry::new(&Policy::AVAILABILITY).run(async |_| client.get().await))
        .await;

    assert!(outcome.is_expired());
    let closed = tokio::time::timeout(SLACK, server.wait_for_closed(1)).await;
    assert!(closed.is_ok(), "the server never saw the connection closed");
    assert_eq!(server.closed().len(), 1);
    assert_within(server.closed()[0], Duration::from_millis(1400));
}

#[tokio::test]
async fn a_cancel_during_an_attempt_ends_it_at_once() {
    let server = Server::start([Step::Stall]).await;
    let client = server.client();
    let turn = Turn::new(Duration::from_secs(60));
    let canceller = turn.canceller();

    let work = turn.run(
        Retry::new(&Policy::AVAILABILITY)
            .named("model")
            .run(async |_| client.get().await),
    );
    let cancel = async {
        server.wait_for_requests(1).await;
        canceller.cancel();
        Instant::now()
    };
    let ((outcome, report), cancelled_at) = tokio::join!(work, cancel);

    assert!(cancelled_at.elapsed() < SLACK);
    assert!(outcome.is_cancelled());
    assert_eq!(report.in_flight().len(), 1);
    assert_eq!(report.in_flight()[0].attempt, 1);
    let closed = tokio::time::timeout(SLACK, server.wait_for_closed(1)).await;
    assert!(closed.is_ok(), "the server never saw the connection closed");
}

#[tokio::test]
async fn each_timed_out_attempt_is_dropped_at_its_timeout_and_retried_under_transient() {
    let server = Server::start(Step::Stall.times(3)).await;
    let client = server.client();

    let started = Instant::now();
    let result = transient_within_300ms(&client).await;
    let elapsed = started.elapsed();

    let Err(CallError::TimedOut(timed_out)) = result else {
        panic!("expected the caller's `TimedOut` variant, got {result:?}");
    };
    assert_eq!(timed_out.bound(), TimeoutBound::Timeout);
    assert_within(timed_out.ran(), Duration::from_millis(300));
    assert_eq!(server.requests(), 3);
    let closed = tokio::time::timeout(SLACK, server.wait_for_closed(3)).await;
    assert!(
        closed.is_ok(),
        "the server saw {:?} closed",
        server.closed()
    );
    for open in server.closed() {
        // Measured from the request's arrival, a little after the attempt started.
        assert_within(open, Duration::from_millis(250));
    }
    assert_within(elapsed, Duration::from_millis(900));
}

#[tokio::test]
async fn under_outage_a_timed_out_attempt_is_not_retried() {
    let server = Server::start([Step::Stall, Step::ok("never")]).await;
    let client = server.client();

    let result = outage_within_300ms(&client).await;

    assert!(matches!(result, Err(CallError::TimedOut(_))), "{result:?}");
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn under_transient_a_timed_out_attempt_is_retried() {
    let server = Server::start([Step::Stall, Step::ok("reply")]).await;
    let client = server.client();

    let result = transient_within_300ms(&client).await;

    assert_eq!(result.unwrap().body, "reply");
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn an_answer_that_comes_before_the_timeout_is_kept() {
    let server =
        Server::start([Step::ok("slow but in time").after(Duration::from_millis(100))]).await;
    let client = server.client();

    let result = transient_within_300ms(&client).await;

    assert_eq!(result.unwrap().body, "slow but in time");
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn an_answer_later_than_the_timeout_is_not_waited_for() {
    let server = Server::start([
        Step::ok("too late").after(Duration::from_secs(5)),
        Step::ok("reply"),
    ])
    .await;
    let client = server.client();

    let started = Instant::now();
    let result = transient_within_300ms(&client).await;

    assert_eq!(result.unwrap().body, "reply");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_annotated_future_with_a_timeout_is_send() {
    let server = Server::start([Step::ok("reply")]).await;
    let client = server.client();

    // `tokio::spawn` on a multi-thread runtime requires the future to be `Send`.
    let task = tokio::spawn(async move { transient_within_300ms(&client).await });

    assert_eq!(task.await.unwrap().unwrap().body, "reply");
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_mid_wait_refunds_its_quota_and_appears_in_the_report() {
    static QUOTA: Quota = Quota::new(100);
    let (outcome, report) = Turn::new(Duration::from_secs(180))
        .run(async {
            let call = Retry::new(&Policy::OUTAGE)
                .named("model")
                .with_quota(&QUOTA)
                .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }));
            // One second into the first wait (at least 2.5 s), the caller gives up on it.
            tokio::time::timeout(Duration::from_secs(1), call).await
        })
        .await;

    assert!(outcome.unwrap().is_err());

    assert_eq!(QUOTA.available(), 100);
    assert_eq!(report.calls(), 1);
    assert_eq!(report.attempts(), 1);
    assert_eq!(report.retries(), 0);
    assert_eq!(report.waiting(), Duration::from_secs(1));
    let cut: Vec<_> = report
        .cut_waits()
        .iter()
        .map(|wait: &CutWait| (wait.op.as_str(), wait.after_attempt, wait.waited))
        .collect();
    assert_eq!(cut, [("model", 1, Duration::from_secs(1))]);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_mid_wait_outside_a_turn_refunds_its_quota() {
    static QUOTA: Quota = Quota::new(100);
    let call = Retry::new(&Policy::OUTAGE)
        .with_quota(&QUOTA)
        .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }));

    let _ = tokio::time::timeout(Duration::from_secs(1), call).await;

    assert_eq!(QUOTA.available(), 100);
}

#[tokio::test(start_paused = true)]
async fn when_the_turn_and_the_timeout_end_together_the_turn_wins() {
    let (outcome, report) = Turn::new(Duration::from_secs(2))
        .run(
            Retry::new(&Policy::TRANSIENT)
                .timeout(Duration::from_secs(2))
                .run(async |_| std::future::pending::<Result<(), Class>>().await),
        )
        .await;

    assert!(outcome.is_expired());
    assert_eq!(report.in_flight().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_is_bounded_by_what_is_left_of_a_literal_budget() {
    let gave_up = Retry::new(&Policy::TRANSIENT)
        .within(retry_runtime::Deadline::Within(Duration::from_secs(1)))
        .timeout(Duration::from_secs(5))
        .run(async |_| std::future::pending::<Result<(), CallError>>().await)
        .await
        .unwrap_err();

    let CallError::TimedOut(timed_out) = gave_up.into_error() else {
        panic!("expected a timed-out attempt");
    };
    assert_eq!(timed_out.bound(), TimeoutBound::Budget);
    assert_eq!(timed_out.ran(), Duration::from_secs(1));
}

/// Skips every wait, as a test clock may: the attempt timer must not go with it.
#[derive(Clone, Copy)]
struct Impatient;

impl Clock for Impatient {
    type Sleep = BoxSleep;

    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, _wait: Duration) -> BoxSleep {
        Box::pin(async {})
    }
    fn draw(&self) -> Draw {
        Draw::IDEAL
    }
}

#[tokio::test(start_paused = true)]
async fn a_clock_that_skips_waits_does_not_fire_the_attempt_timer() {
    let result = Retry::new(&Policy::TRANSIENT)
        .timeout(Duration::from_secs(2))
        .with_clock(Impatient)
        .run(async |_| {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<_, Class>("in time")
        })
        .await;

    assert_eq!(result.unwrap(), "in time");
}

#[tokio::test(start_paused = true)]
async fn a_nested_turn_shortens_its_parents_bound_but_never_lengthens_it() {
    let remaining = |budget| async move {
        Turn::new(budget)
            .run(async { retry_runtime::turn::remaining() })
            .await
            .0
            .unwrap()
    };
    let (outcome, _) = Turn::new(Duration::from_secs(10))
        .run(async {
            (
                remaining(Duration::from_secs(3)).await,
                remaining(Duration::from_secs(3600)).await,
            )
        })
        .await;
    let (shorter, longer) = outcome.unwrap();

    assert_eq!(shorter, Some(Duration::from_secs(3)));
    assert_eq!(longer, Some(Duration::from_secs(10)));
}

#[tokio::test(start_paused = true)]
async fn the_hooks_hear_one_event_when_a_turn_ends_early() {
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    let turn = Turn::new(Duration::from_secs(2)).on_notice(move |notice| {
        sink.lock().unwrap().push(notice.to_string());
    });

    let (outcome, _) = turn
        .run(
            Retry::new(&Policy::AVAILABILITY)
                .run(async |_| std::future::pending::<Result<(), Class>>().await),
        )
        .await;

    assert!(outcome.is_expired());
    assert_eq!(
        *heard.lock().unwrap(),
        [
            "the turn ended after 2000 ms (its deadline passed): 1 call dropped in an attempt, 0 waits cut short"
        ]
    );
}

#[tokio::test]
async fn a_turns_counts_match_what_the_server_saw_when_attempts_time_out_and_the_turn_ends() {
    // Three attempts of 300 ms time out; a fourth would be retried, but the turn ends in it.
    let server = Server::start(Step::Stall.times(4)).await;
    let client = server.client();

    let (outcome, report) = Turn::new(Duration::from_millis(1100))
        .run(
            Retry::new(
                const {
                    &Policy::TRANSIENT
                        .with_attempts(10)
                        .with_base(Duration::from_millis(10))
                },
            )
            .timeout(Duration::from_millis(300))
            .run(async |_| Ok::<_, CallError>(client.get().await?)),
        )
        .await;

    assert!(outcome.is_expired());
    assert_eq!(report.attempts(), server.requests());
    assert_eq!(report.retries(), report.attempts() - 1);
    assert_eq!(report.in_flight().len(), 1);
}
