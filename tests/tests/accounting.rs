//! The turn's report counts each moment and each attempt once, at every depth of nesting:
//! waiting is every ladder's waits, working the rest of the elapsed time, and attempts what
//! the far side saw.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{Class, GaveUp, Policy, Retry, Turn, TurnReport, testing};

const WORK: Duration = Duration::from_millis(100);

/// `depth` retried calls, one inside the other; the innermost works 100 ms per attempt and
/// fails once with `Unavailable` before it succeeds (one 250 ms wait).
fn nested<'a>(
    depth: u32,
    reached: &'a AtomicU32,
) -> Pin<Box<dyn Future<Output = Result<(), Class>> + 'a>> {
    Box::pin(async move {
        if depth == 1 {
            Retry::new(&Policy::AVAILABILITY)
                .named("innermost")
                .run(async |_| {
                    tokio::time::sleep(WORK).await;
                    if reached.fetch_add(1, Ordering::SeqCst) == 0 {
                        Err(Class::Unavailable { retry_after: None })
                    } else {
                        Ok(())
                    }
                })
                .await
                .map_err(GaveUp::into_error)
        } else {
            Retry::new(&Policy::AVAILABILITY)
                .named("outer")
                .run(async |_| nested(depth - 1, reached).await)
                .await
                .map_err(GaveUp::into_error)
        }
    })
}

async fn report_at_depth(depth: u32) -> (TurnReport, u32) {
    let reached = AtomicU32::new(0);
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(nested(depth, &reached))).await;
    outcome.into_finished().unwrap().unwrap();
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
    (report, reached.load(Ordering::SeqCst))
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn nested_waiting_is_never_counted_as_working_at_depths_1_to_3() {
    for depth in 1..=3 {
        let (report, _) = report_at_depth(depth).await;
        assert_eq!(
            report.waiting(),
            Duration::from_millis(250),
            "depth {depth}"
        );
        assert_eq!(
            report.working(),
            2 * WORK,
            "depth {depth}: two attempts of 100 ms"
        );
        assert_eq!(report.calls(), depth, "depth {depth}");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_turns_attempts_are_what_the_far_side_saw_at_depths_1_to_3() {
    for depth in 1..=3 {
        let (report, reached) = report_at_depth(depth).await;
        assert_eq!(reached, 2, "depth {depth}");
        assert_eq!(report.attempts(), reached, "depth {depth}");
        assert_eq!(report.retries(), 1, "depth {depth}");
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn calls_one_after_another_add_up_to_the_turns_elapsed_time() {
    let reached = AtomicU32::new(0);
    let started = tokio::time::Instant::now();
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(async {
            nested(2, &reached).await?;
            reached.store(0, Ordering::SeqCst);
            nested(1, &reached).await
        }))
        .await;
    outcome.into_finished().unwrap().unwrap();
    // Waits in a testing scope are skipped, not slept: tokio's clock saw only the work.
    let elapsed = started.elapsed() + recorded.total();
    assert_eq!(report.working() + report.waiting(), elapsed);
    assert_eq!(report.working(), 4 * WORK);
}
