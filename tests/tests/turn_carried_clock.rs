//! A call carried into a spawned task with `TurnHandle::scope`, whose `Retry` has a clock of
//! its own, is counted in its turn's report on that clock, when the turn ends with it still
//! in flight (issue 56, item 8): its attempt's running time, and its wait's time so far, are
//! the time its clock says passed, not tokio's instants set against its clock's.

use std::time::Duration;

use retry_runtime::{Class, Clock, Draw, Policy, Retry, Turn, turn};
use tokio::time::Instant;

/// A clock 30 s behind tokio's, which runs at tokio's pace: the instants it hands out are
/// never tokio's, so a report that sets them against tokio's counts 30 s too many. (Behind,
/// not ahead: a turn's deadline is read on it too, and a clock ahead finds the turn over.)
#[derive(Debug, Clone, Copy)]
struct Behind;

impl Clock for Behind {
    type Sleep = tokio::time::Sleep;

    fn now(&self) -> Instant {
        Instant::now() - Duration::from_secs(30)
    }

    fn sleep(&self, wait: Duration) -> tokio::time::Sleep {
        tokio::time::sleep(wait)
    }

    fn draw(&self) -> Draw {
        Draw::from_unit(0.5)
    }
}

/// The turn's work carries `job` into a task of its own, then ends after two seconds of
/// (paused) time, with the job still in flight.
async fn carried<F>(job: F) -> retry_runtime::TurnReport
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (outcome, report) = Turn::new(Duration::from_secs(60))
        .run(async move {
            let handle = turn::current().expect("inside a turn");
            let task = tokio::spawn(handle.scope(job));
            tokio::time::sleep(Duration::from_secs(2)).await;
            task.abort_handle()
        })
        .await;
    let turn::TurnOutcome::Finished(task) = outcome else {
        panic!("the turn's work finishes");
    };
    task.abort();
    report
}

#[tokio::test(start_paused = true)]
async fn a_carried_attempt_in_flight_runs_as_long_as_its_own_clock_says() {
    let job = Retry::new(&Policy::AVAILABILITY)
        .named("carried")
        .with_clock(Behind)
        .run(async |_| std::future::pending::<Result<(), Class>>().await);
    let report = carried(job).await;
    assert_eq!(report.in_flight().len(), 1, "{report:?}");
    assert_eq!(report.in_flight()[0].running, Duration::from_secs(2));
    assert_eq!(report.working(), Duration::from_secs(2));
    assert_eq!(report.waiting(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_carried_wait_in_progress_counts_as_long_as_its_own_clock_says() {
    // `outage` waits 5 s after its first failure: the turn ends 2 s into that wait.
    let job = Retry::new(&Policy::OUTAGE)
        .named("carried")
        .with_clock(Behind)
        .run(async |_| Err::<(), _>(Class::Unavailable { retry_after: None }));
    let report = carried(job).await;
    assert_eq!(report.cut_waits().len(), 1, "{report:?}");
    assert_eq!(report.cut_waits()[0].waited, Duration::from_secs(2));
    assert_eq!(report.waiting(), Duration::from_secs(2));
    assert_eq!(report.working(), Duration::ZERO);
}
