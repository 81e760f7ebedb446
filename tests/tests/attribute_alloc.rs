//! A first-try success of an annotated function allocates nothing.
//!
//! `allocation-counter` installs a counting `#[global_allocator]` in this test binary and
//! counts the allocations of the current thread only; a test binary has one global allocator,
//! so these tests live apart from `attribute.rs`.

use retry_runtime::{Class, retry};
use retry_tests::{poll_once, warmed_runtime};

#[retry]
async fn answer(n: u32) -> Result<u32, Class> {
    Ok(n * 2)
}

#[retry(policy = "transient", budget = "30s")]
async fn answer_within_a_budget(n: u32) -> Result<u32, Class> {
    Ok(n * 2)
}

#[test]
fn a_first_try_success_of_an_annotated_function_allocates_nothing() {
    let mut result = None;

    let counted = allocation_counter::measure(|| result = Some(poll_once(answer(21))));

    assert_eq!(result, Some(Ok(42)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

#[test]
fn a_first_try_success_under_a_literal_budget_allocates_nothing() {
    let runtime = warmed_runtime();
    let mut result = None;

    let counted = allocation_counter::measure(|| {
        result = Some(runtime.block_on(answer_within_a_budget(21)));
    });

    assert_eq!(result, Some(Ok(42)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Fails on every other call: a retry at (almost) zero wait, then a success.
#[retry(base_ms = 1, jitter = "none")]
async fn fails_every_other_call() -> Result<u32, Class> {
    if CALLS
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        .is_multiple_of(2)
    {
        Err(Class::Transport)
    } else {
        Ok(2)
    }
}

#[test]
fn one_retry_of_an_annotated_function_allocates_at_most_once() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a paused current-thread runtime");
    // The runtime's and the RNG's own first-use costs are not the retry's.
    runtime.block_on(fails_every_other_call()).unwrap();

    let mut result = None;
    let counted =
        allocation_counter::measure(|| result = Some(runtime.block_on(fails_every_other_call())));

    assert_eq!(result, Some(Ok(2)));
    assert!(counted.count_total <= 1, "{counted:?}");
}
