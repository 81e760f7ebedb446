//! Issue 22: configuration made at run time is borrowed or shared, never leaked: a policy read
//! from the environment runs in a local scope; a `Retry` with a shared policy, quota and an
//! owned name moves into `tokio::spawn` on a multi-thread runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::{Class, Policy, Quota, Retry, StopReason, Turn, testing};

/// Attempts from the environment, with a fallback (`set_var` is `unsafe` in edition 2024, so
/// the test reads a variable it does not set).
fn attempts_from_env() -> u32 {
    std::env::var("RETRY_TEST_ATTEMPTS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(3)
}

#[tokio::test]
async fn a_policy_built_from_the_environment_runs_in_a_local_scope() {
    let policy = Policy::AVAILABILITY.with_attempts(attempts_from_env());
    let calls = AtomicU32::new(0);
    let (result, recorded) = testing::scope(Retry::new(&policy).run(async |_| {
        calls.fetch_add(1, Ordering::SeqCst);
        Err::<(), _>(Class::Transport)
    }))
    .await;
    let attempts = attempts_from_env();
    assert_eq!(
        result.unwrap_err().reason(),
        StopReason::Exhausted { attempts }
    );
    assert_eq!(calls.load(Ordering::SeqCst), attempts);
    assert_eq!(recorded.waits().len(), attempts as usize - 1);
}

#[test]
fn a_retry_from_configuration_with_an_owned_name_is_spawned_and_retried_on_a_multi_thread_runtime()
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let tenant = String::from("acme");
    let retry = Retry::new(Arc::new(
        Policy::AVAILABILITY.with_attempts(attempts_from_env()),
    ))
    .named_owned(Arc::<str>::from(format!("model:{tenant}")))
    .with_shared_quota(Arc::new(Quota::standard()));
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let work = testing::scope(
        Turn::new(Duration::from_secs(180)).run(retry.run_fn(move |_| {
            let calls = Arc::clone(&counted);
            async move {
                match calls.fetch_add(1, Ordering::SeqCst) {
                    0 => Err(Class::Unavailable { retry_after: None }),
                    _ => Ok("reply"),
                }
            }
        })),
    );
    let ((outcome, report), recorded) = runtime
        .block_on(async { tokio::spawn(work).await })
        .unwrap();
    assert_eq!(outcome.unwrap().unwrap(), "reply");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
    assert_eq!(report.retries(), 1);
}

#[tokio::test]
async fn an_owned_name_reaches_the_turns_report_and_its_hooks() {
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    let turn = Turn::new(Duration::from_secs(180)).on_notice(move |notice| {
        if let Some(event) = notice.retry() {
            sink.lock().unwrap().push(event.op.to_owned());
        }
    });
    let name = String::from("tenant-7");
    let ((outcome, report), _) = testing::scope(
        turn.run(
            Retry::new(&Policy::AVAILABILITY)
                .named_owned(name)
                .run(async |_| Err::<(), _>(Class::Definitive)),
        ),
    )
    .await;
    assert!(outcome.unwrap().is_err());
    assert_eq!(*heard.lock().unwrap(), ["tenant-7"]);
    assert_eq!(report.gave_up()[0].op, "tenant-7");
}

#[tokio::test]
async fn a_shared_quota_is_one_budget_for_every_call_that_holds_it() {
    let quota = Arc::new(Quota::standard());
    // Spend it: every retry of these calls draws from the one quota.
    for _ in 0..200 {
        let retry = Retry::new(&Policy::AVAILABILITY).with_shared_quota(Arc::clone(&quota));
        let _ = testing::scope(retry.run(async |_| Err::<(), _>(Class::Transport))).await;
    }
    let retry = Retry::new(&Policy::AVAILABILITY).with_shared_quota(Arc::clone(&quota));
    let (result, _) = testing::scope(retry.run(async |_| Err::<(), _>(Class::Transport))).await;
    assert_eq!(result.unwrap_err().reason(), StopReason::Quota);
}
