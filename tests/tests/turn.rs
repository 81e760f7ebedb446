//! Issue 4: the turn is the budget a ladder must fit, and its report separates waiting from
//! working. Virtual time throughout: `testing::scope` skips waits, `start_paused` drives the
//! time the operations take.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use retry_runtime::notice::{Action, Notice, RetryEvent, TurnEnded};
use retry_runtime::turn::{CutWait, InFlight, TurnFuture, TurnOutcome, TurnReport};
use retry_runtime::{
    BoxSleep, Class, Clock, Deadline, Draw, GaveUp, Policy, Quota, Retry, StopReason, Turn,
    testing, turn,
};
use tokio::time::Instant;

const TURN: Duration = Duration::from_secs(180);

#[tokio::test(start_paused = true)]
async fn a_wait_that_would_cross_the_deadline_is_not_taken() {
    let turn = Turn::new(Duration::from_secs(60));
    let ((result, report), recorded) = testing::scope(turn.run(async {
        Retry::new(&Policy::OUTAGE)
            .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }))
            .await
    }))
    .await;

    let gave_up = result.unwrap().unwrap_err();
    // 5 s and 15 s fit in the minute; 45 s would not, with 40 s left.
    assert_eq!(
        gave_up.reason(),
        StopReason::Budget {
            wanted: Duration::from_secs(45),
            remaining: Duration::from_secs(40),
        }
    );
    assert_eq!(gave_up.attempts(), 3);
    assert_eq!(recorded.waits(), [5, 15].map(Duration::from_secs));
    assert_eq!(gave_up.waited(), Duration::from_secs(20));
    assert_eq!(report.waiting(), Duration::from_secs(20));
    assert!(gave_up.is_undetermined());
}

#[tokio::test(start_paused = true)]
async fn the_report_separates_waiting_from_working() {
    let turn = Turn::new(TURN);
    let ((result, report), _) = testing::scope(turn.run(async {
        Retry::new(&Policy::OUTAGE)
            .run(async |attempt| {
                // Each attempt takes the far side two seconds of (virtual) time.
                tokio::time::sleep(Duration::from_secs(2)).await;
                if attempt <= 3 {
                    Err(Class::Unavailable { retry_after: None })
                } else {
                    Ok("reply")
                }
            })
            .await
    }))
    .await;

    assert_eq!(result.unwrap().unwrap(), "reply");
    assert_eq!(report.waiting(), Duration::from_secs(65));
    assert_eq!(report.working(), Duration::from_secs(8));
    assert_eq!(report.attempts(), 4);
    assert_eq!(
        report.retries_of(Class::Unavailable { retry_after: None }),
        3
    );
    assert!(report.gave_up().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_report_lists_each_ladder_that_gave_up_with_its_reason() {
    let turn = Turn::new(TURN);
    let ((_, report), _) = testing::scope(turn.run(async {
        let model = Retry::new(&Policy::AVAILABILITY).named("model");
        let _ = model.run(async |_| Err::<(), _>(Class::Definitive)).await;
        let _ = model.run(async |_| Err::<(), _>(Class::Transport)).await;
    }))
    .await;

    let reasons: Vec<_> = report
        .gave_up()
        .iter()
        .map(|r| (r.op.as_str(), r.reason, r.attempts))
        .collect();
    assert_eq!(
        reasons,
        [
            ("model", StopReason::Definitive, 1),
            ("model", StopReason::Exhausted { attempts: 4 }, 4),
        ]
    );
    assert_eq!(report.calls(), 2);
    assert_eq!(report.attempts(), 5);
    assert_eq!(report.retries_of(Class::Transport), 3);
}

#[tokio::test(start_paused = true)]
async fn outside_a_turn_only_attempts_bound_the_ladder() {
    // The outage ladder waits 65 s; with no turn around it, nothing cuts it short.
    let (result, recorded) = testing::scope(
        Retry::new(&Policy::OUTAGE)
            .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None })),
    )
    .await;

    assert_eq!(
        result.unwrap_err().reason(),
        StopReason::Exhausted { attempts: 4 }
    );
    assert_eq!(recorded.total(), Duration::from_secs(65));
}

#[tokio::test(start_paused = true)]
async fn a_literal_budget_bounds_one_call() {
    let bounded = Retry::new(&Policy::OUTAGE).within(Deadline::Within(Duration::from_secs(30)));
    let (result, recorded) =
        testing::scope(bounded.run(async |_| Err::<(), _>(Class::Transport))).await;

    assert_eq!(
        result.unwrap_err().reason(),
        StopReason::Budget {
            wanted: Duration::from_secs(45),
            remaining: Duration::from_secs(10),
        }
    );
    assert_eq!(recorded.waits(), [5, 15].map(Duration::from_secs));
}

#[tokio::test(start_paused = true)]
async fn a_literal_budget_inside_a_turn_keeps_the_sooner_deadline() {
    // The call may take two minutes, but the turn has only 10 s: the 15 s wait is not taken.
    let bounded = Retry::new(&Policy::OUTAGE).within(Deadline::Within(Duration::from_secs(120)));
    let ((result, _), recorded) = testing::scope(
        Turn::new(Duration::from_secs(10))
            .run(bounded.run(async |_| Err::<(), _>(Class::Transport))),
    )
    .await;

    assert!(matches!(
        result.unwrap().unwrap_err().reason(),
        StopReason::Budget { .. }
    ));
    assert_eq!(recorded.waits(), [Duration::from_secs(5)]);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_that_outlives_the_turn_is_dropped_at_the_deadline() {
    let turn = Turn::new(TURN);
    let started = Instant::now();
    let ((outcome, report), recorded) = testing::scope(turn.run(async {
        Retry::new(&Policy::AVAILABILITY)
            .named("model")
            .run(async |_| {
                tokio::time::sleep(Duration::from_secs(200)).await;
                Err::<(), _>(Class::Unavailable { retry_after: None })
            })
            .await
    }))
    .await;

    assert_eq!(started.elapsed(), TURN);
    assert!(outcome.is_expired());
    assert!(recorded.waits().is_empty());
    assert_eq!(report.calls(), 1);
    assert_eq!(report.attempts(), 1);
    assert_eq!(report.working(), TURN);
    let in_flight: Vec<_> = report
        .in_flight()
        .iter()
        .map(|call: &InFlight| (call.op.as_str(), call.attempt, call.running))
        .collect();
    assert_eq!(in_flight, [("model", 1, TURN)]);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_that_would_succeed_after_the_deadline_is_dropped() {
    let turn = Turn::new(Duration::from_secs(1));
    let (outcome, _) = turn
        .run(Retry::new(&Policy::AVAILABILITY).run(async |_| {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, Class>("too late")
        }))
        .await;
    assert!(outcome.is_expired());
}

#[tokio::test(start_paused = true)]
async fn a_turn_cancelled_mid_wait_stops_the_ladder_at_once() {
    let turn = Turn::new(TURN);
    let canceller = turn.canceller();
    let started = Instant::now();
    let work = turn.run(
        Retry::new(&Policy::OUTAGE)
            .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None })),
    );
    let cancel = async {
        // One second into the first 5 s wait.
        tokio::time::sleep(Duration::from_secs(1)).await;
        canceller.cancel();
    };
    let ((outcome, report), ()) = tokio::join!(work, cancel);

    assert!(outcome.is_cancelled());
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(report.attempts(), 1);
    assert_eq!(report.waiting(), Duration::from_secs(1));
    let cut: Vec<_> = report
        .cut_waits()
        .iter()
        .map(|wait: &CutWait| (wait.after_attempt, wait.waited))
        .collect();
    assert_eq!(cut, [(1, Duration::from_secs(1))]);
    // Equal jitter on the outage ladder's 5 s: never shorter than half.
    assert!(report.cut_waits()[0].wanted >= Duration::from_millis(2500));
}

#[tokio::test(start_paused = true)]
async fn nothing_runs_on_after_a_cancelled_turn_returns() {
    let attempts = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&attempts);
    let turn = Turn::new(TURN);
    let canceller = turn.canceller();
    let work = tokio::spawn(turn.run(Retry::new(&Policy::OUTAGE).run(async move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        Err::<(), _>(Class::Unavailable { retry_after: None })
    })));
    tokio::time::sleep(Duration::from_secs(1)).await;
    canceller.cancel();
    let (outcome, _) = work.await.unwrap();
    assert!(outcome.is_cancelled());

    // Long past every wait the ladder had planned: no attempt was made behind our back, and
    // no task or timer of the ladder's is left.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        0
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_wait_is_not_counted_as_a_retry_and_refunds_the_quota() {
    static QUOTA: Quota = Quota::new(100);
    let turn = Turn::new(TURN);
    let canceller = turn.canceller();
    let work = turn.run(
        Retry::new(&Policy::OUTAGE)
            .with_quota(&QUOTA)
            .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None })),
    );
    let cancel = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        canceller.cancel();
    };
    let ((outcome, report), ()) = tokio::join!(work, cancel);

    assert!(outcome.is_cancelled());
    assert_eq!(report.retries(), 0);
    assert_eq!(report.attempts(), 1);
    assert_eq!(QUOTA.available(), 100);
}

#[tokio::test(start_paused = true)]
async fn a_turn_inside_a_turn_keeps_the_outer_deadline() {
    let outer = Turn::new(Duration::from_secs(10));
    let ((result, outer_report), recorded) = testing::scope(outer.run(async {
        let inner = Turn::new(Duration::from_secs(3600));
        let (outcome, _) = inner
            .run(
                Retry::new(&Policy::OUTAGE)
                    .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None })),
            )
            .await;
        outcome.unwrap()
    }))
    .await;

    // 5 s fits in the outer turn's 10 s; 15 s does not, whatever the inner turn allows.
    assert_eq!(recorded.waits(), [Duration::from_secs(5)]);
    assert!(matches!(
        result.unwrap().unwrap_err().reason(),
        StopReason::Budget { .. }
    ));
    // The inner turn's call counts in the outer report too.
    assert_eq!(outer_report.calls(), 1);
    assert_eq!(outer_report.retries(), 1);
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_outer_turn_drops_a_ladder_in_an_inner_turn() {
    let outer = Turn::new(TURN);
    let canceller = outer.canceller();
    let work = outer.run(async {
        Turn::new(TURN)
            .run(
                Retry::new(&Policy::OUTAGE)
                    .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None })),
            )
            .await
    });
    let cancel = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        canceller.cancel();
    };
    let started = Instant::now();
    let ((outcome, report), ()) = tokio::join!(work, cancel);

    assert!(outcome.is_cancelled());
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(report.cut_waits().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_inner_turns_hook_and_the_outer_turns_hook_both_hear_a_retry() {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let (outer_heard, inner_heard) = (Arc::clone(&heard), Arc::clone(&heard));
    let outer = Turn::new(TURN).on_notice(move |e| {
        if let Some(e) = e.retry() {
            outer_heard.lock().unwrap().push(("outer", e.attempt));
        }
    });
    let ((_, _), _) = testing::scope(outer.run(async {
        Turn::new(TURN)
            .on_notice(move |e| {
                if let Some(e) = e.retry() {
                    inner_heard.lock().unwrap().push(("inner", e.attempt));
                }
            })
            .run(Retry::new(&Policy::AVAILABILITY).run(async |attempt| {
                if attempt == 1 {
                    Err(Class::Transport)
                } else {
                    Ok(())
                }
            }))
            .await
    }))
    .await;

    assert_eq!(*heard.lock().unwrap(), [("inner", 1), ("outer", 1)]);
}

#[tokio::test(start_paused = true)]
async fn a_spawned_task_is_outside_the_turn_unless_it_carries_the_handle() {
    let (outcome, _) = Turn::new(Duration::from_secs(10))
        .run(async {
            let job = || {
                Retry::new(&Policy::OUTAGE)
                    .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }))
            };
            let without = tokio::spawn(testing::scope(job())).await.unwrap().1;
            let handle = turn::current().expect("inside a turn");
            let with = tokio::spawn(testing::scope(handle.scope(job())))
                .await
                .unwrap()
                .1;
            (without.total(), with.total())
        })
        .await;
    let (waits_without, waits_with) = outcome.unwrap();

    assert_eq!(waits_without, Duration::from_secs(65));
    assert_eq!(waits_with, Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_turn_too_long_to_be_an_instant_has_no_deadline() {
    let ((result, _), recorded) = testing::scope(
        Turn::new(Duration::MAX).run(
            Retry::new(&Policy::OUTAGE)
                .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None })),
        ),
    )
    .await;

    assert_eq!(
        result.unwrap().unwrap_err().reason(),
        StopReason::Exhausted { attempts: 4 }
    );
    assert_eq!(recorded.total(), Duration::from_secs(65));
}

#[tokio::test(start_paused = true)]
async fn an_expired_literal_budget_is_reported_as_budget_not_cancelled() {
    let bounded =
        Retry::new(&Policy::AVAILABILITY).within(Deadline::Within(Duration::from_secs(2)));
    let result = bounded
        .run(async |_| {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Err::<(), _>(Class::Unavailable { retry_after: None })
        })
        .await;

    let gave_up = result.unwrap_err();
    assert!(
        matches!(gave_up.reason(), StopReason::Budget { remaining, .. } if remaining.is_zero()),
        "{:?}",
        gave_up.reason()
    );
    assert_eq!(gave_up.attempts(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_turn_cancelled_before_it_runs_makes_no_attempt() {
    let turn = Turn::new(TURN);
    turn.canceller().cancel();
    let ((outcome, report), recorded) = testing::scope(
        turn.run(Retry::new(&Policy::AVAILABILITY).run(async |_| Err::<(), _>(Class::Transport))),
    )
    .await;

    assert!(outcome.is_cancelled());
    assert_eq!(report.attempts(), 0);
    assert!(recorded.waits().is_empty());
}

#[tokio::test(start_paused = true)]
async fn work_dropped_at_the_deadline_still_sees_its_turn_while_it_is_dropped() {
    /// Notes, when dropped, whether the turn was still visible.
    struct SeesTurn(Arc<Mutex<Option<bool>>>);
    impl Drop for SeesTurn {
        fn drop(&mut self) {
            *self.0.lock().unwrap() =
                Some(turn::current().is_some() && turn::remaining().is_some());
        }
    }
    let seen = Arc::new(Mutex::new(None));
    let guard = SeesTurn(Arc::clone(&seen));

    let (outcome, _report) = Turn::new(Duration::from_secs(1))
        .run(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        })
        .await;

    assert!(outcome.is_expired());
    assert_eq!(*seen.lock().unwrap(), Some(true));
}

#[test]
fn a_ready_future_in_a_zero_turn_finishes_on_a_paused_and_on_a_real_clock() {
    for paused in [true, false] {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(paused)
            .build()
            .unwrap();
        let (outcome, _) = runtime.block_on(Turn::new(Duration::ZERO).run(std::future::ready(7)));
        assert_eq!(
            outcome,
            retry_runtime::turn::TurnOutcome::Finished(7),
            "paused: {paused}"
        );
    }
}

#[test]
fn a_pending_future_in_a_zero_turn_expires_on_a_paused_and_on_a_real_clock() {
    for paused in [true, false] {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(paused)
            .build()
            .unwrap();
        let (outcome, _) =
            runtime.block_on(Turn::new(Duration::ZERO).run(std::future::pending::<()>()));
        assert!(outcome.is_expired(), "paused: {paused}");
    }
}

#[tokio::test(start_paused = true)]
async fn inside_a_testing_scope_a_turn_drops_its_work_at_its_deadline_net_of_the_skipped_waits() {
    let started = Instant::now();
    let ((outcome, report), recorded) = testing::scope(Turn::new(Duration::from_secs(1)).run(
        Retry::new(&Policy::AVAILABILITY).run(async |attempt| {
            if attempt < 3 {
                return Err(Class::Transport);
            }
            std::future::pending::<Result<(), Class>>().await
        }),
    ))
    .await;
    assert!(outcome.is_expired());
    // 250 + 500 ms were skipped: the third attempt had the 250 ms left, not another second.
    assert_eq!(recorded.total(), Duration::from_millis(750));
    assert_eq!(started.elapsed(), Duration::from_millis(250));
    assert!(
        report.working() + report.waiting() <= Duration::from_secs(1),
        "{report}"
    );
}

/// What [`a_turn_future_named_in_a_field_spawns_on_a_multi_thread_runtime`] runs: a ladder
/// inside a testing scope, so its waits are recorded, not slept.
type Work = Pin<Box<dyn Future<Output = (Result<u32, GaveUp<Class>>, testing::Recorded)> + Send>>;

/// A job that keeps its turn in a field, by the future's name.
struct Job {
    turn: TurnFuture<Work>,
}

#[test]
fn a_turn_future_named_in_a_field_spawns_on_a_multi_thread_runtime() {
    let work: Work = Box::pin(testing::scope(Retry::new(&Policy::AVAILABILITY).run(
        async |attempt| {
            if attempt < 3 {
                Err(Class::Unavailable { retry_after: None })
            } else {
                Ok(attempt)
            }
        },
    )));
    let job = Job {
        turn: Turn::new(TURN).run(work),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (outcome, report) = runtime.block_on(async move { tokio::spawn(job.turn).await.unwrap() });

    let (result, recorded) = outcome.unwrap();
    assert_eq!(result.unwrap(), 3);
    assert_eq!(report.retries(), 2);
    assert_eq!(report.waiting(), recorded.total());
}

#[test]
fn a_turn_future_is_send_and_sync_when_its_work_is() {
    fn send_and_sync<T: Send + Sync>(_: &T) {}
    send_and_sync(&Turn::new(TURN).run(std::future::ready(7)));
}

#[tokio::test(start_paused = true)]
async fn a_turn_starts_at_its_first_poll_not_when_its_future_is_made() {
    let turn = Turn::new(Duration::from_secs(10)).run(async { turn::remaining() });
    // Made now, awaited 30 s later: its 10 s run from the first poll.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let (outcome, _) = turn.await;
    assert_eq!(outcome.unwrap(), Some(Duration::from_secs(10)));
}

/// An outage that never ends: a call of it waits 5 s after its first attempt.
fn outage_job() -> impl Future<Output = Result<(), retry_runtime::GaveUp<Class>>> + Send {
    Retry::new(&Policy::OUTAGE)
        .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }))
}

#[retry_runtime::retry(policy = "outage")]
async fn annotated_outage() -> Result<(), Class> {
    Err(Class::Unavailable { retry_after: None })
}

/// A spawned job carrying the current turn: the turn's work hands it out and ends at once,
/// and the job runs on in the turn's scope.
struct Carried<T>(tokio::task::JoinHandle<T>);

fn carry<F>(job: F) -> Carried<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    Carried(tokio::spawn(turn::current().expect("in a turn").scope(job)))
}

/// `canceller`'s turn cancelled one second into `job`'s first 5 s wait: the job's output, and
/// how long after the job was handed out it ended.
async fn cancelled_in_its_wait<T>(
    canceller: retry_runtime::Canceller,
    Carried(job): Carried<T>,
) -> (T, Duration) {
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    canceller.cancel();
    let output = job.await.unwrap();
    (output, started.elapsed())
}

/// A cancel reaches a ladder carried into a spawned task only through the wait's own
/// listener (the turn cannot drop that task): it ends the wait, and the call gives up with
/// its failure, unchanged, and `Cancelled` (issue 36).
#[tokio::test(start_paused = true)]
async fn a_carried_ladder_cancelled_in_its_wait_gives_up_with_its_failure() {
    let turn = Turn::new(TURN);
    let canceller = turn.canceller();
    let (outcome, _) = turn.run(async { carry(outage_job()) }).await;
    let (result, ended) = cancelled_in_its_wait(canceller, outcome.unwrap()).await;
    let gave_up = result.unwrap_err();

    assert_eq!(gave_up.reason(), StopReason::Cancelled);
    assert_eq!(gave_up.attempts(), 1);
    assert_eq!(
        gave_up.into_error(),
        Class::Unavailable { retry_after: None }
    );
    assert_eq!(ended, Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn a_carried_annotated_call_cancelled_in_its_wait_returns_its_failure() {
    let turn = Turn::new(TURN);
    let canceller = turn.canceller();
    let (outcome, _) = turn.run(async { carry(annotated_outage()) }).await;
    let (result, ended) = cancelled_in_its_wait(canceller, outcome.unwrap()).await;

    assert_eq!(result, Err(Class::Unavailable { retry_after: None }));
    assert_eq!(ended, Duration::from_secs(1));
}

/// A cancel of a turn cancels every turn opened inside it: a ladder carried from an inner
/// turn into a task hears the outer turn's cancel in its wait.
#[tokio::test(start_paused = true)]
async fn cancelling_the_outer_turn_ends_the_wait_of_a_ladder_carried_from_an_inner_turn() {
    let outer = Turn::new(TURN);
    let canceller = outer.canceller();
    let (outcome, _) = outer
        .run(async {
            let (inner, _) = Turn::new(TURN).run(async { carry(outage_job()) }).await;
            inner.unwrap()
        })
        .await;
    let (result, ended) = cancelled_in_its_wait(canceller, outcome.unwrap()).await;

    assert_eq!(result.unwrap_err().reason(), StopReason::Cancelled);
    assert_eq!(ended, Duration::from_secs(1));
}

/// The same on a multi-thread runtime: the cancel, made on this thread, wakes the wait on a
/// worker. The job says when its attempt has failed; whether the cancel then finds it in its
/// wait or deciding, it gives up with its failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_wakes_a_carried_wait_on_another_thread() {
    let turn = Turn::new(TURN);
    let canceller = turn.canceller();
    let (failed_tx, failed_rx) = tokio::sync::oneshot::channel();
    let mut failed_tx = Some(failed_tx);
    let job = Retry::new(&Policy::OUTAGE).run_fn(move |_| {
        if let Some(tx) = failed_tx.take() {
            let _ = tx.send(());
        }
        std::future::ready(Err::<(), _>(Class::Unavailable { retry_after: None }))
    });
    let (outcome, _) = turn.run(async { carry(job) }).await;
    let Carried(job) = outcome.unwrap();
    failed_rx.await.unwrap();
    canceller.cancel();
    let gave_up = job.await.unwrap().unwrap_err();

    assert_eq!(gave_up.reason(), StopReason::Cancelled);
    assert_eq!(gave_up.attempts(), 1);
}

/// A carried ladder's wait cut short by a cancel gives the quota back the retry it paid for,
/// as a wait the turn drops does.
#[tokio::test(start_paused = true)]
async fn a_carried_ladders_wait_cut_short_refunds_the_quota() {
    static QUOTA: Quota = Quota::new(100);
    let turn = Turn::new(TURN);
    let canceller = turn.canceller();
    let job = Retry::new(&Policy::OUTAGE)
        .with_quota(&QUOTA)
        .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }));
    let (outcome, _) = turn.run(async { carry(job) }).await;
    let Carried(job) = outcome.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(QUOTA.available() < 100, "the retry was paid for");
    canceller.cancel();
    let gave_up = job.await.unwrap().unwrap_err();

    assert_eq!(gave_up.reason(), StopReason::Cancelled);
    assert_eq!(QUOTA.available(), 100);
}

/// What a turn's hook heard: each retry's chosen wait, in order, and the notice of the turn's
/// end; and, once the second retry is announced, a permit (the call's wait starts in the same
/// poll, so on a current-thread runtime it has started when the permit is taken).
#[derive(Default)]
struct Heard {
    waits: Mutex<Vec<Duration>>,
    ended: Mutex<Option<TurnEnded>>,
    second_retry: tokio::sync::Notify,
}

impl Heard {
    fn hook(self: &Arc<Self>) -> impl Fn(&Notice<'_>) + Send + Sync + 'static {
        let heard = Arc::clone(self);
        move |notice| match notice {
            Notice::TurnEnded(ended) => *heard.ended.lock().unwrap() = Some(*ended),
            Notice::Retry(RetryEvent {
                action: Action::Retry { backoff },
                ..
            }) => {
                let mut waits = heard.waits.lock().unwrap();
                waits.push(*backoff);
                if waits.len() == 2 {
                    heard.second_retry.notify_one();
                }
            }
            _ => {}
        }
    }

    fn waits(&self) -> Vec<Duration> {
        self.waits.lock().unwrap().clone()
    }

    fn ended(&self) -> TurnEnded {
        self.ended.lock().unwrap().expect("the turn said it ended")
    }
}

/// Tokio's time and the ideal draw; every wait is over at once but the second, which says it
/// has begun (the call's flight has started it by then) and never ends by itself. A carried
/// call is brought into its second wait without a real sleep.
#[derive(Clone, Default)]
struct SecondWaitHangs {
    sleeps: Arc<AtomicU32>,
    second_begun: Arc<tokio::sync::Notify>,
}

impl Clock for SecondWaitHangs {
    type Sleep = BoxSleep;

    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, _wait: Duration) -> BoxSleep {
        if self.sleeps.fetch_add(1, Ordering::SeqCst) == 1 {
            self.second_begun.notify_one();
            Box::pin(std::future::pending())
        } else {
            Box::pin(async {})
        }
    }
    fn draw(&self) -> Draw {
        Draw::IDEAL
    }
}

/// The figures of a turn cancelled while a call carried out of its work was in its second
/// wait: the call's two attempts, its one retry, its first wait and the part of its second
/// it waited (`cut_for`), the wait cut, no call in an attempt; the hook told the same.
fn assert_counts_the_call_cut_in_its_second_wait(
    outcome: &TurnOutcome<()>,
    report: &TurnReport,
    heard: &Heard,
    (first, second): (Duration, Duration),
    cut_for: Duration,
) {
    assert!(outcome.is_cancelled());
    assert_eq!(report.calls(), 1, "{report}");
    assert_eq!(report.attempts(), 2, "{report}");
    assert_eq!(report.retries(), 1, "{report}");
    assert_eq!(
        report.retries_of(Class::Unavailable { retry_after: None }),
        1
    );
    assert_eq!(report.waiting(), first + cut_for, "{report}");
    assert!(report.in_flight().is_empty(), "{report}");
    let [cut] = report.cut_waits() else {
        panic!("one wait cut: {report}");
    };
    assert_eq!(cut.op, "job");
    assert_eq!(cut.after_attempt, 2);
    assert_eq!(cut.waited, cut_for);
    assert_eq!(cut.wanted, second);
    let ended = heard.ended();
    assert_eq!((ended.in_flight, ended.cut_waits), (0, 1));
}

/// Issue 42: a turn cancelled while a call carried out of its work (`TurnHandle::scope`) waits
/// for the second time reports that call as it stands: every attempt it made, its retry, its
/// waits and the wait cut, though the call itself hears the cancel only after the turn has
/// returned. The turn is polled at once after the cancel, before the call's task runs.
#[tokio::test(start_paused = true)]
async fn a_cancelled_turns_report_counts_a_carried_call_cut_in_its_second_wait() {
    let heard = Arc::new(Heard::default());
    let turn = Turn::new(TURN).on_notice(heard.hook());
    let canceller = turn.canceller();
    let job = Retry::new(&Policy::OUTAGE)
        .named("job")
        .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }));
    // The work waits for the call it carried: only the cancel ends it.
    let mut turn = std::pin::pin!(turn.run(async {
        let _ = carry(job).0.await;
    }));
    tokio::select! {
        _ = &mut turn => unreachable!("the work waits for its call"),
        () = heard.second_retry.notified() => {}
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    canceller.cancel();
    let (outcome, report) = turn.await;

    let [first, second] = heard.waits()[..] else {
        panic!("two retries announced: {:?}", heard.waits());
    };
    assert_counts_the_call_cut_in_its_second_wait(
        &outcome,
        &report,
        &heard,
        (first, second),
        Duration::from_secs(1),
    );
    assert_eq!(
        report.to_string(),
        format!(
            "1 calls, 2 attempts, 1 retries; 0 ms working, {} ms waiting; `job`'s wait after \
             attempt 2 was cut short at 1000 of {} ms",
            (first + Duration::from_secs(1)).as_millis(),
            second.as_millis()
        )
    );
}

/// The same on a multi-thread runtime, where the call's task, on a worker, may hear the
/// cancel before or after the turn takes its report: either way the report counts it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_turns_report_counts_a_carried_call_cut_in_its_second_wait_on_another_thread() {
    let heard = Arc::new(Heard::default());
    let turn = Turn::new(TURN).on_notice(heard.hook());
    let canceller = turn.canceller();
    let clock = SecondWaitHangs::default();
    let job = Retry::new(&Policy::OUTAGE)
        .named("job")
        .with_clock(clock.clone())
        .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }));
    let mut turn = std::pin::pin!(turn.run(async {
        let _ = carry(job).0.await;
    }));
    tokio::select! {
        _ = &mut turn => unreachable!("the work waits for its call"),
        () = clock.second_begun.notified() => {}
    }
    canceller.cancel();
    let (outcome, report) = turn.await;

    // The ideal ladder: 5 s, then 15 s, of which the call waited what the cut wait says.
    let waits = (Duration::from_secs(5), Duration::from_secs(15));
    assert_eq!(heard.waits(), [waits.0, waits.1]);
    let cut_for = report
        .cut_waits()
        .first()
        .map_or(Duration::ZERO, |cut| cut.waited);
    assert!(cut_for < Duration::from_secs(15), "{report}");
    assert_counts_the_call_cut_in_its_second_wait(&outcome, &report, &heard, waits, cut_for);
}

/// The other order, on a paused clock: the carried call hears the cancel, gives up and writes
/// its record before the turn takes its report. The report is the same, with the give-up.
#[tokio::test(start_paused = true)]
async fn a_carried_call_that_gives_up_before_its_cancelled_turn_ends_is_counted_once() {
    let heard = Arc::new(Heard::default());
    let turn = Turn::new(TURN).on_notice(heard.hook());
    let canceller = turn.canceller();
    let (gave_up_tx, gave_up_rx) = tokio::sync::oneshot::channel();
    let job = async move {
        let result = Retry::new(&Policy::OUTAGE)
            .named("job")
            .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }))
            .await;
        let _ = gave_up_tx.send(result.map_err(|gave_up| gave_up.reason()));
    };
    let mut turn = std::pin::pin!(turn.run(async {
        carry(job).0.await.unwrap();
    }));
    tokio::select! {
        _ = &mut turn => unreachable!("the work waits for its call"),
        () = heard.second_retry.notified() => {}
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    canceller.cancel();
    assert_eq!(gave_up_rx.await.unwrap(), Err(StopReason::Cancelled));
    let (outcome, report) = turn.await;

    let [first, second] = heard.waits()[..] else {
        panic!("two retries announced: {:?}", heard.waits());
    };
    let cut_for = Duration::from_secs(1);
    assert_counts_the_call_cut_in_its_second_wait(
        &outcome,
        &report,
        &heard,
        (first, second),
        cut_for,
    );
    let [gave_up] = report.gave_up() else {
        panic!("one give-up: {report}");
    };
    assert_eq!(
        (gave_up.reason, gave_up.attempts),
        (StopReason::Cancelled, 2)
    );
}

/// Between the two: the turn takes its report while the carried call, its wait cut, is
/// telling the hooks it gives up (on a worker, held there until the report is taken). The
/// wait is counted as cut at the cancel, once, and the call as in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_ends_while_a_carried_call_gives_up_counts_its_cut_wait_once() {
    let heard = Arc::new(Heard::default());
    let (giving_up_tx, giving_up_rx) = std::sync::mpsc::channel();
    let (go_on_tx, go_on_rx) = std::sync::mpsc::channel::<()>();
    let go_on_rx = Mutex::new(go_on_rx);
    let hear = heard.hook();
    let turn = Turn::new(TURN).on_notice(move |notice| {
        hear(notice);
        if let Notice::Retry(RetryEvent {
            action: Action::GiveUp { .. },
            ..
        }) = notice
        {
            giving_up_tx.send(()).unwrap();
            go_on_rx.lock().unwrap().recv().unwrap();
        }
    });
    let canceller = turn.canceller();
    let clock = SecondWaitHangs::default();
    let job = Retry::new(&Policy::OUTAGE)
        .named("job")
        .with_clock(clock.clone())
        .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }));
    let mut turn = std::pin::pin!(turn.run(async {
        let _ = carry(job).0.await;
    }));
    tokio::select! {
        _ = &mut turn => unreachable!("the work waits for its call"),
        () = clock.second_begun.notified() => {}
    }
    canceller.cancel();
    // The call, on a worker, has cut its wait and is in its give-up's notice.
    giving_up_rx.recv().unwrap();
    let (outcome, report) = turn.await;
    go_on_tx.send(()).unwrap();

    let waits = (Duration::from_secs(5), Duration::from_secs(15));
    let cut_for = report
        .cut_waits()
        .first()
        .map_or(Duration::ZERO, |cut| cut.waited);
    assert_counts_the_call_cut_in_its_second_wait(&outcome, &report, &heard, waits, cut_for);
    assert!(report.gave_up().is_empty(), "not given up yet: {report}");
}

/// Issue 42: all a turn returns is named from `retry_runtime::turn`, where `TurnOutcome` is,
/// as the README's imports name it; the root's names are the same types.
#[tokio::test(start_paused = true)]
async fn a_turns_outcome_report_and_canceller_are_named_from_the_turn_module() {
    let turn = turn::Turn::new(TURN);
    let canceller: turn::Canceller = turn.canceller();
    canceller.cancel();
    let (outcome, report): (turn::TurnOutcome<()>, turn::TurnReport) = turn.run(async {}).await;
    let root: (TurnOutcome<()>, retry_runtime::TurnReport) = (outcome, report);
    let _: retry_runtime::Canceller = canceller;
    assert!(root.0.is_cancelled());
    assert_eq!(root.1, TurnReport::default());
}

/// Issue 42, at scale: ten thousand calls carried out of a turn's work, all brought into a
/// wait at once (each takes its place among those who hear the cancel, in constant time),
/// all hear the cancel, and the report counts each once, as it stood: whether the call or the
/// turn heard the cancel first.
#[tokio::test(start_paused = true)]
async fn ten_thousand_carried_calls_waiting_in_one_turn_each_hear_its_cancel_and_count_once() {
    const CALLS: u32 = 10_000;
    let turn = Turn::new(TURN);
    let canceller = turn.canceller();
    let (jobs_tx, jobs_rx) = tokio::sync::oneshot::channel();
    let work = async move {
        let jobs: Vec<_> = (0..CALLS).map(|_| carry(outage_job()).0).collect();
        let _ = jobs_tx.send(jobs);
        std::future::pending::<()>().await
    };
    // The clock moves only once every call is parked in its first wait.
    let cancel = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        canceller.cancel();
    };
    let ((outcome, report), ()) = tokio::join!(turn.run(work), cancel);

    assert!(outcome.is_cancelled());
    assert_eq!(
        (report.calls(), report.attempts(), report.retries()),
        (CALLS, CALLS, 0)
    );
    assert_eq!(report.waiting(), Duration::from_secs(CALLS.into()));
    assert!(report.in_flight().is_empty());
    assert_eq!(report.cut_waits().len(), CALLS as usize);
    assert!(
        report
            .cut_waits()
            .iter()
            .all(|cut| (cut.after_attempt, cut.waited) == (1, Duration::from_secs(1)))
    );
    for job in jobs_rx.await.unwrap() {
        assert_eq!(
            job.await.unwrap().unwrap_err().reason(),
            StopReason::Cancelled
        );
    }
}
