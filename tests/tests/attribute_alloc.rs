//! A first-try success of an annotated function allocates nothing.
//!
//! `allocation-counter` installs a counting `#[global_allocator]` in this test binary and
//! counts the allocations of the current thread only; a test binary has one global allocator,
//! so these tests live apart from `attribute.rs`.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use retry_runtime::{Class, retry};

#[retry]
async fn answer(n: u32) -> Result<u32, Class> {
    Ok(n * 2)
}

#[retry(policy = "transient", budget = "30s")]
async fn answer_within_a_budget(n: u32) -> Result<u32, Class> {
    Ok(n * 2)
}

/// Poll `future` once with a waker that does nothing; it must be ready.
fn poll_once<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a first-try success completes on its first poll"),
    }
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build a current-thread runtime");
    // The runtime's first `block_on` sets up its thread-locals: the runtime's cost, paid once.
    runtime.block_on(async {});
    let mut result = None;

    let counted = allocation_counter::measure(|| {
        result = Some(runtime.block_on(answer_within_a_budget(21)));
    });

    assert_eq!(result, Some(Ok(42)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}
