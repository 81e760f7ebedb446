//! A first-try success allocates nothing, and a retry at most once: the hot path of every
//! call, through `Retry` or an annotated function, pays only for what it uses (issue 2's
//! quality bar).
//!
//! `allocation-counter` installs a counting `#[global_allocator]` in this test binary only
//! (no other test names the crate) and counts the allocations of the current thread, so the
//! test harness's own threads do not disturb the count.

use retry_runtime::{Class, Policy, Retry, retry};
use retry_tests::{poll_once, warmed_runtime};

#[test]
fn a_first_try_success_allocates_nothing() {
    let mut result = None;

    let counted = allocation_counter::measure(|| {
        let retry = Retry::new(&Policy::AVAILABILITY);
        result = Some(poll_once(retry.run(async |_| Ok::<_, Class>(42))));
    });

    assert_eq!(result.map(Result::ok), Some(Some(42)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

#[test]
fn a_first_try_success_on_a_tokio_runtime_allocates_nothing() {
    let runtime = warmed_runtime();
    let mut result = None;

    let counted = allocation_counter::measure(|| {
        result = Some(runtime.block_on(async {
            Retry::new(&Policy::AVAILABILITY)
                .run(async |_| Ok::<_, Class>(42))
                .await
        }));
    });

    assert_eq!(result.map(Result::ok), Some(Some(42)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

#[test]
fn each_built_in_policy_and_every_later_call_allocates_nothing_on_a_first_try_success() {
    for policy in &Policy::BUILT_IN {
        let retry = Retry::new(policy);
        for _ in 0..3 {
            let counted = allocation_counter::measure(|| {
                let result = poll_once(retry.run(async |attempt| Ok::<_, Class>(attempt)));
                assert!(matches!(result, Ok(1)));
            });
            assert_eq!(counted.count_total, 0, "{}: {counted:?}", policy.name());
        }
    }
}

#[test]
fn the_counter_sees_an_allocation_on_this_thread() {
    // Without this, a counter that never counts would pass every test above.
    let counted = allocation_counter::measure(|| {
        std::hint::black_box(Box::new(7_u64));
    });

    assert_eq!(counted.count_total, 1);
}

/// A ladder whose first wait is a nanosecond, without jitter: a retry at (almost) zero wait.
const NO_WAIT: retry_runtime::Policy = Policy::AVAILABILITY
    .with_base(std::time::Duration::from_nanos(1))
    .with_jitter(retry_runtime::Jitter::None);

async fn fails_once() -> Result<u32, retry_runtime::GaveUp<Class>> {
    Retry::new(&NO_WAIT)
        .run(async |attempt| {
            if attempt == 1 {
                Err(Class::Transport)
            } else {
                Ok(attempt)
            }
        })
        .await
}

/// A paused current-thread runtime that has already run [`fails_once`]: the runtime's and the
/// RNG's own first-use costs are not the retry's.
fn paused_after_one_retry() -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a paused current-thread runtime");
    runtime.block_on(fails_once()).unwrap();
    runtime
}

#[test]
fn one_retry_allocates_at_most_once() {
    let runtime = paused_after_one_retry();

    let mut result = None;
    let counted = allocation_counter::measure(|| result = Some(runtime.block_on(fails_once())));

    assert_eq!(result.map(Result::ok), Some(Some(2)));
    assert!(counted.count_total <= 1, "{counted:?}");
}

#[test]
fn one_retrys_box_holds_the_sleep_the_failure_and_three_words() {
    let runtime = paused_after_one_retry();

    let counted = allocation_counter::measure(|| {
        runtime.block_on(fails_once()).unwrap();
    });

    // tokio's sleep, the failure it follows, the call's state and the turn's cancel (none
    // here): nothing else of the failure path waits in the box.
    let words = 3 * std::mem::size_of::<usize>();
    let most = std::mem::size_of::<tokio::time::Sleep>() + std::mem::size_of::<Class>() + words;
    assert_eq!(counted.count_total, 1, "{counted:?}");
    assert!(
        counted.bytes_total <= most as u64,
        "{} bytes, at most {most}",
        counted.bytes_total
    );
}

// The attribute's expansion, counted the same way.

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

/// A delta's text with no escape is borrowed from the event's data: reading it allocates
/// nothing, for each provider's shape (issue 34).
#[test]
fn reading_a_deltas_text_without_escapes_allocates_nothing() {
    use retry_runtime::sse::Event;
    let events = [
        Event::new(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
        ),
        Event::new(
            "",
            r#"{"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#,
        ),
        Event::new(
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","sequence_number":4,"delta":"Hello"}"#,
        ),
        Event::new(
            "",
            r#"{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"index":0}]}"#,
        ),
    ];
    for event in &events {
        let counted = allocation_counter::measure(|| {
            assert_eq!(std::hint::black_box(event.text()).as_deref(), Some("Hello"));
        });
        assert_eq!(counted.count_total, 0, "{}: {counted:?}", event.data());
    }
}
