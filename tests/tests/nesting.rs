//! Issue 4: retry at one layer. A retried call inside another retried call is marked; when the
//! inner ladder gives up on a transient failure, the outer one does not retry it again.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};

use retry_runtime::{Class, GaveUp, Policy, Retry, StopReason, testing};

async fn inner(reached: &AtomicU32) -> Result<(), GaveUp<Class>> {
    Retry::new(&Policy::AVAILABILITY)
        .named("inner")
        .run(async |_| {
            reached.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(Class::Unavailable { retry_after: None })
        })
        .await
}

#[tokio::test(flavor = "current_thread")]
async fn four_inside_four_is_four_attempts_not_sixteen() {
    let reached = AtomicU32::new(0);
    let (result, recorded) = testing::scope(
        Retry::new(&Policy::AVAILABILITY)
            .named("outer")
            .run(async |_| inner(&reached).await.map_err(GaveUp::into_error)),
    )
    .await;

    assert_eq!(reached.load(Ordering::SeqCst), 4);
    let gave_up = result.unwrap_err();
    assert_eq!(gave_up.reason(), StopReason::Nested);
    assert_eq!(gave_up.attempts(), 1);
    // Only the inner ladder waited.
    assert_eq!(recorded.waits().len(), 3);
    // The verdict is unchanged: still could not determine.
    assert!(gave_up.is_undetermined());
}

#[tokio::test(flavor = "current_thread")]
async fn an_outer_ladder_still_retries_its_own_failures() {
    // The inner call succeeds; the outer attempt then fails on its own: that is retried.
    let outer_attempts = AtomicU32::new(0);
    let (result, _) = testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |attempt| {
        outer_attempts.fetch_add(1, Ordering::SeqCst);
        Retry::new(&Policy::AVAILABILITY)
            .run(async |_| Ok::<_, Class>(()))
            .await
            .map_err(GaveUp::into_error)?;
        if attempt < 3 {
            Err(Class::Transport)
        } else {
            Ok(())
        }
    }))
    .await;

    result.unwrap();
    assert_eq!(outer_attempts.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn an_inner_answer_is_not_retried_by_either_layer() {
    let reached = AtomicU32::new(0);
    let (result, _) = testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| {
        Retry::new(&Policy::AVAILABILITY)
            .run(async |_| {
                reached.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>(Class::Definitive)
            })
            .await
            .map_err(GaveUp::into_error)
    }))
    .await;

    assert_eq!(reached.load(Ordering::SeqCst), 1);
    assert_eq!(result.unwrap_err().reason(), StopReason::Definitive);
}

#[tokio::test(flavor = "current_thread")]
async fn sequential_calls_are_not_nested() {
    // A ladder that gave up earlier in the task does not mark a later, unrelated call.
    let _ = testing::scope(inner(&AtomicU32::new(0))).await;
    let reached = AtomicU32::new(0);
    let (_, _) = testing::scope(inner(&reached)).await;
    assert_eq!(reached.load(Ordering::SeqCst), 4);
}

/// Pending once (waking itself), then ready: a point where a task may move to another thread.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn the_nesting_marker_follows_the_task_across_threads() {
    static REACHED: AtomicU32 = AtomicU32::new(0);
    // Plain closures returning `async move` blocks: rustc cannot yet prove an `async`
    // closure's borrowing future `Send` for `std::thread::spawn` (see `Retry::run`).
    let outer = testing::scope(Retry::new(&Policy::AVAILABILITY).run(|_| async move {
        YieldOnce(false).await;
        let inner = Retry::new(&Policy::AVAILABILITY).run(|_| async move {
            REACHED.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(Class::Unavailable { retry_after: None })
        });
        let result = inner.await.map_err(GaveUp::into_error);
        YieldOnce(false).await;
        result
    }));
    let mut outer = Box::pin(outer);
    let mut cx = Context::from_waker(Waker::noop());

    // The first poll runs on this thread up to the first yield, inside the outer attempt...
    assert!(outer.as_mut().poll(&mut cx).is_pending());
    // ...and every later poll on another thread, where the inner ladder gives up.
    let (result, _) = std::thread::spawn(move || {
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(output) = outer.as_mut().poll(&mut cx) {
                return output;
            }
        }
    })
    .join()
    .unwrap();

    assert_eq!(REACHED.load(Ordering::SeqCst), 4);
    assert_eq!(result.unwrap_err().reason(), StopReason::Nested);
}

#[tokio::test(flavor = "current_thread")]
async fn an_inner_give_up_stops_the_outer_ladder_whatever_its_own_failure_says() {
    // The body tries a helper, which runs out on `Unavailable`, then fails on its own with
    // `Transport`. Retrying the attempt would run the helper's whole ladder again: the rule is
    // class-agnostic, so the outer ladder stops.
    let outer_attempts = AtomicU32::new(0);
    let reached = AtomicU32::new(0);
    let (result, _) = testing::scope(Retry::new(&Policy::AVAILABILITY).run(async |_| {
        outer_attempts.fetch_add(1, Ordering::SeqCst);
        let _helper = inner(&reached).await;
        Err::<(), _>(Class::Transport)
    }))
    .await;

    assert_eq!(result.unwrap_err().reason(), StopReason::Nested);
    assert_eq!(outer_attempts.load(Ordering::SeqCst), 1);
    assert_eq!(reached.load(Ordering::SeqCst), 4);
}

#[tokio::test(flavor = "current_thread")]
async fn two_inner_give_ups_in_one_attempt_still_stop_the_outer_ladder() {
    // Inner A gives up on `Unavailable`, then inner B on `Timeout`, in the same attempt; the
    // outer failure is A's. A runs four times in all, not sixteen.
    let reached_a = AtomicU32::new(0);
    let reached_b = AtomicU32::new(0);
    let (result, _) = testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| {
        let a = inner(&reached_a).await;
        let _b = Retry::new(&Policy::TRANSIENT)
            .named("inner-b")
            .run(async |_| {
                reached_b.fetch_add(1, Ordering::SeqCst);
                Err::<(), _>(Class::Timeout)
            })
            .await;
        a.map_err(GaveUp::into_error)
    }))
    .await;

    assert_eq!(result.unwrap_err().reason(), StopReason::Nested);
    assert_eq!(reached_a.load(Ordering::SeqCst), 4);
    assert_eq!(reached_b.load(Ordering::SeqCst), 5);
}

#[tokio::test(flavor = "current_thread")]
async fn an_inner_call_that_declined_to_retry_leaves_the_outer_ladder_free_to() {
    // The inner ladder (availability) does not retry a 500; the outer one (transient) does.
    let reached = AtomicU32::new(0);
    let (result, _) = testing::scope(Retry::new(&Policy::TRANSIENT).run(async |_| {
        Retry::new(&Policy::AVAILABILITY)
            .run(async |_| {
                let n = reached.fetch_add(1, Ordering::SeqCst);
                if n < 2 {
                    Err(Class::ServerError)
                } else {
                    Ok(())
                }
            })
            .await
            .map_err(GaveUp::into_error)
    }))
    .await;

    result.unwrap();
    assert_eq!(reached.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn nesting_is_logged_once_per_outer_ladder() {
    let capture = retry_tests::capture::Capture::default();
    let _guard = capture.install();
    let reached = AtomicU32::new(0);

    let _ = testing::scope(
        Retry::new(&Policy::AVAILABILITY)
            .named("outer")
            .run(async |_| inner(&reached).await.map_err(GaveUp::into_error)),
    )
    .await;

    let warnings: Vec<_> = capture
        .events()
        .into_iter()
        .filter(|event| event["level"] == "WARN" && event["message"].contains("nested"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert_eq!(warnings[0]["op"], "outer");
}

mod annotated {
    //! The same rule through `#[retry]`, against a real server on loopback.

    use retry_runtime::{retry, testing};
    use retry_tests::{CallError, Client, Reply, Server, Step};

    #[retry(name = "inner")]
    async fn fetch(client: &Client) -> Result<Reply, CallError> {
        client.get().await
    }

    #[retry(name = "outer")]
    async fn fetch_twice_removed(client: &Client) -> Result<Reply, CallError> {
        fetch(client).await
    }

    #[tokio::test(flavor = "current_thread")]
    async fn nested_annotated_functions_reach_a_failing_server_4_times_not_16() {
        let server = Server::start(Step::status(503).times(16)).await;

        let (result, recorded) = testing::scope(fetch_twice_removed(&server.client())).await;

        assert_eq!(server.requests(), 4);
        assert_eq!(result.unwrap_err().status(), Some(503));
        // The inner ladder's three waits, and none from the outer one.
        assert_eq!(recorded.waits().len(), 3);
    }
}
