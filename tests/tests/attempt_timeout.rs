//! An attempt's timer fires even when the attempt never yields on its own: tokio's cooperative
//! budget makes an always-ready resource return `Pending` now and then, and the timer is
//! polled outside that budget, as tokio's own `timeout` polls its delay.
//!
//! Short real time: a paused clock never advances while a task is busy.

use std::time::Duration;

use retry_runtime::{Class, Policy, Retry, TimedOut, TimeoutBound};

#[tokio::test(flavor = "current_thread")]
async fn an_attempt_busy_on_an_always_ready_semaphore_is_ended_by_its_timeout() {
    let semaphore = tokio::sync::Semaphore::new(1);
    let gave_up = Retry::new(&Policy::AVAILABILITY)
        .timeout(Duration::from_millis(200))
        .run(async |_| {
            loop {
                // Always ready: only the cooperative budget ever makes this wait.
                drop(semaphore.acquire().await);
            }
            #[allow(unreachable_code)]
            Ok::<(), Busy>(())
        })
        .await
        .unwrap_err();
    let Busy::TimedOut(timed_out) = gave_up.error();
    assert_eq!(timed_out.bound(), TimeoutBound::Timeout);
    assert!(timed_out.ran() >= Duration::from_millis(200));
    assert_eq!(gave_up.attempts(), 1);
}

#[derive(Debug, thiserror::Error)]
enum Busy {
    #[error(transparent)]
    TimedOut(#[from] TimedOut),
}

impl retry_runtime::Classify for Busy {
    fn classify(&self) -> Class {
        Class::Timeout
    }
}
