//! With the `metrics` feature on, a first-try success still allocates nothing, a recorder
//! installed or not. An operation's handles are registered on its first use on a thread (that
//! call pays for the keys); every later call only increments them.
//!
//! `allocation-counter` installs a counting `#[global_allocator]` in this test binary only and
//! counts the allocations of the current thread.

use metrics_util::debugging::DebuggingRecorder;
use retry_runtime::{Class, Policy, Retry};
use retry_tests::poll_once;

const FETCH: Retry = Retry::new(&Policy::AVAILABILITY).named("fetch");

fn first_try() -> Result<u32, retry_runtime::GaveUp<Class>> {
    poll_once(FETCH.run(async |_| Ok::<_, Class>(42)))
}

#[test]
fn a_first_try_success_with_no_recorder_allocates_nothing_after_the_ops_first_call() {
    assert_eq!(first_try().ok(), Some(42));

    let counted = allocation_counter::measure(|| {
        assert_eq!(first_try().ok(), Some(42));
    });

    assert_eq!(counted.count_total, 0, "{counted:?}");
}

#[test]
fn a_first_try_success_recorded_allocates_nothing_after_the_ops_first_call() {
    let recorder = DebuggingRecorder::new();
    let _local = metrics::set_default_local_recorder(&recorder);
    assert_eq!(first_try().ok(), Some(42));

    let counted = allocation_counter::measure(|| {
        for _ in 0..3 {
            assert_eq!(first_try().ok(), Some(42));
        }
    });

    assert_eq!(counted.count_total, 0, "{counted:?}");
    let calls = recorder.snapshotter().snapshot().into_vec().len();
    assert_eq!(calls, 2, "the call and its attempt, each one series");
}

#[test]
fn the_counter_sees_an_allocation_on_this_thread() {
    let counted = allocation_counter::measure(|| {
        std::hint::black_box(Box::new(7_u64));
    });
    assert_eq!(counted.count_total, 1);
}
