//! Issue 4: retry at one layer. A retried call inside another retried call is marked; when the
//! inner ladder gives up on a transient failure, the outer one does not retry it again.

use std::sync::atomic::{AtomicU32, Ordering};

use retry_runtime::{Class, GaveUp, Policy, Retry, StopReason, testing};

async fn inner(reached: &AtomicU32) -> Result<(), GaveUp<Class>> {
    Retry::new(&Policy::AVAILABILITY)
        .named("inner")
        .run(async |_| {
            reached.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>(Class::Unavailable)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nesting_marker_follows_the_task_across_threads() {
    let reached = AtomicU32::new(0);
    let outer = async {
        Retry::new(&Policy::AVAILABILITY)
            .run(async |_| {
                // Yield so the task may resume on the other worker before the inner call.
                tokio::task::yield_now().await;
                let result = inner(&reached).await.map_err(GaveUp::into_error);
                tokio::task::yield_now().await;
                result
            })
            .await
    };
    let (result, _) = testing::scope(outer).await;

    assert_eq!(reached.load(Ordering::SeqCst), 4);
    assert_eq!(result.unwrap_err().reason(), StopReason::Nested);
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

    let nested: Vec<_> = capture
        .events()
        .into_iter()
        .filter(|event| event["message"].contains("nested"))
        .collect();
    assert_eq!(nested.len(), 1, "{nested:#?}");
    assert_eq!(nested[0]["op"], "outer");
}

mod annotated {
    //! The same rule through `#[retry]`, against a real server on loopback.

    use retry_runtime::{retry, testing};
    use retry_tests::{Client, HttpError, Reply, Server, Step};

    #[retry(name = "inner")]
    async fn fetch(client: &Client) -> Result<Reply, HttpError> {
        client.get().await
    }

    #[retry(name = "outer")]
    async fn fetch_twice_removed(client: &Client) -> Result<Reply, HttpError> {
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
