//! The retry path's bounds, from the same definitions the bench prints them with
//! (`benches/retry_path/contenders.rs`): a retried call's future is at most the smallest peer's
//! plus the failure it keeps and the listener (`Retry::run`'s, and the `Retry` it owns), and a
//! call parked in its wait weighs at most 64 bytes more on the heap than the lightest peer's,
//! as tokio sizes a task's cell (issue 36).

#[path = "../benches/retry_path/contenders.rs"]
#[allow(dead_code)]
mod contenders;

use contenders::*;

fn smallest_peer() -> usize {
    [
        std::mem::size_of_val(&tokio_retry()),
        std::mem::size_of_val(&backon()),
        std::mem::size_of_val(&backoff()),
    ]
    .into_iter()
    .min()
    .expect("three peers")
}

fn lightest_peer() -> u64 {
    let real = real_runtime();
    [
        parked_heap(&real, tokio_retry_parked),
        parked_heap(&real, backon_parked),
        parked_heap(&real, backoff_parked),
    ]
    .into_iter()
    .min()
    .expect("three peers")
}

#[test]
fn an_annotated_functions_future_is_at_most_the_smallest_peers_and_the_failure_and_listener() {
    let (ours, bound) = (
        std::mem::size_of_val(&annotated()),
        future_bound(smallest_peer()),
    );
    assert!(ours <= bound, "{ours} bytes, at most {bound}");
}

#[test]
fn retry_runs_future_is_at_most_that_and_the_retry_it_owns() {
    let (ours, bound) = (
        std::mem::size_of_val(&explicit()),
        explicit_future_bound(smallest_peer()),
    );
    assert!(ours <= bound, "{ours} bytes, at most {bound}");
}

#[test]
fn an_annotated_call_parked_in_its_wait_weighs_at_most_64_bytes_more_than_the_lightest_peers() {
    let (ours, bound) = (
        parked_heap(&real_runtime(), annotated_parked),
        parked_bound(lightest_peer()),
    );
    assert!(ours <= bound, "{ours} bytes, at most {bound}");
}

#[test]
fn a_retry_run_call_parked_in_its_wait_weighs_at_most_64_bytes_more_than_the_lightest_peers() {
    let (ours, bound) = (
        parked_heap(&real_runtime(), explicit_parked),
        parked_bound(lightest_peer()),
    );
    assert!(ours <= bound, "{ours} bytes, at most {bound}");
}

#[test]
fn a_parked_call_is_counted_on_the_heap() {
    // The measure is not empty: a parked call holds at least its task and its future.
    let parked = parked_heap(&real_runtime(), annotated_parked);
    assert!(
        parked >= std::mem::size_of_val(&annotated_parked()) as u64,
        "{parked} bytes"
    );
}

#[test]
fn with_an_argument_the_annotated_future_grows_by_the_argument_and_rustcs_copy_of_it_only() {
    // rustc keeps an `async fn`'s argument twice (as captured, and moved into the body); the
    // plain `async fn` pays the same, so the attribute adds nothing for it.
    let argument = std::mem::size_of::<u64>();
    let with = std::mem::size_of_val(&annotated_with_argument(1));
    let without = std::mem::size_of_val(&annotated());
    assert!(
        with <= without + 2 * argument,
        "{with} bytes with, {without} without"
    );
}
