//! `Retry::stream`'s commit rule on scripted streams (no network): a cut before the first
//! content is retried, a cut after it ends the stream with `Committed`, and no item is ever
//! delivered twice.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

use proptest::prelude::*;
use retry_runtime::{
    Class, Classify, EndedEarly, GaveUp, Policy, Retry, StopReason, Turn, testing,
};
use std::time::Duration;

/// One item of a scripted stream: which attempt sent it, its index, and whether it is content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Item {
    attempt: u32,
    index: usize,
    content: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    Cut,
    Ended,
    Refused,
}

impl From<EndedEarly> for Failure {
    fn from(_: EndedEarly) -> Self {
        Failure::Ended
    }
}

impl Classify for Failure {
    fn classify(&self) -> Class {
        match self {
            Failure::Cut | Failure::Ended => Class::Transport,
            Failure::Refused => Class::Definitive,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

/// The items of attempt `attempt`: `contents` in order, cut after `cut` of them on the first
/// attempt only.
fn script(attempt: u32, contents: &[bool], cut: Option<usize>) -> Vec<Result<Item, Failure>> {
    let upto = match (attempt, cut) {
        (1, Some(cut)) => cut,
        _ => contents.len(),
    };
    let mut items: Vec<_> = contents[..upto]
        .iter()
        .enumerate()
        .map(|(index, &content)| {
            Ok(Item {
                attempt,
                index,
                content,
            })
        })
        .collect();
    if attempt == 1 && cut.is_some() {
        items.push(Err(Failure::Cut));
    }
    items
}

type Delivered = Vec<Result<Item, GaveUp<Failure>>>;

async fn consume(contents: Vec<bool>, cut: Option<usize>, opened: &AtomicU32) -> Delivered {
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|attempt| {
            opened.fetch_add(1, Ordering::SeqCst);
            let items = script(attempt, &contents, cut);
            async move { Ok::<_, Failure>(testing::stream_of(items)) }
        })
        .commit_when(|item: &Item| item.content);
    testing::scope(testing::collect(stream)).await.0
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn a_cut_at_any_index_is_retried_before_the_commit_point_and_ends_the_stream_after_it(
        contents in proptest::collection::vec(any::<bool>(), 1..10),
        cut_at in 0usize..10,
    ) {
        let cut = cut_at.min(contents.len());
        let opened = AtomicU32::new(0);
        let delivered = runtime().block_on(consume(contents.clone(), Some(cut), &opened));
        let first_content = contents.iter().position(|&content| content);
        let items: Vec<Item> = delivered.iter().filter_map(|item| item.as_ref().ok().copied()).collect();

        // No item is ever delivered twice, and the caller sees one attempt's items only.
        let mut seen: Vec<usize> = items.iter().map(|item| item.index).collect();
        seen.dedup();
        prop_assert_eq!(seen.len(), items.len());
        prop_assert!(items.windows(2).all(|pair| pair[0].attempt == pair[1].attempt && pair[0].index + 1 == pair[1].index));

        match first_content {
            // The first attempt committed before it was cut: its items, once, then `Committed`.
            Some(first) if first < cut => {
                prop_assert_eq!(opened.load(Ordering::SeqCst), 1);
                prop_assert_eq!(items.len(), cut);
                prop_assert!(items.iter().all(|item| item.attempt == 1));
                let Some(Err(gave_up)) = delivered.last() else {
                    return Err(TestCaseError::fail("the stream ended without its give-up"));
                };
                prop_assert_eq!(gave_up.reason(), StopReason::Committed);
                prop_assert!(gave_up.is_undetermined());
            }
            // Cut before the commit point: retried, and the second attempt streams whole.
            Some(_) => {
                prop_assert_eq!(opened.load(Ordering::SeqCst), 2);
                prop_assert_eq!(items.len(), contents.len());
                prop_assert!(items.iter().all(|item| item.attempt == 2));
                prop_assert!(delivered.iter().all(Result::is_ok));
            }
            // No content at all: every attempt ends before its commit point, and the ladder
            // runs out with nothing delivered.
            None => {
                prop_assert_eq!(opened.load(Ordering::SeqCst), 4);
                prop_assert!(items.is_empty());
                let Some(Err(gave_up)) = delivered.last() else {
                    return Err(TestCaseError::fail("the stream ended without its give-up"));
                };
                prop_assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
            }
        }
    }
}

#[tokio::test]
async fn an_answer_before_the_commit_point_is_not_retried_and_its_held_items_are_dropped() {
    let opened = AtomicU32::new(0);
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| {
            opened.fetch_add(1, Ordering::SeqCst);
            async {
                Ok::<_, Failure>(testing::stream_of(vec![
                    Ok("preamble"),
                    Err(Failure::Refused),
                ]))
            }
        })
        .commit_when(|item: &&str| *item != "preamble");
    let (delivered, recorded) = testing::scope(testing::collect(stream)).await;
    assert_eq!(opened.load(Ordering::SeqCst), 1);
    assert_eq!(delivered.len(), 1);
    assert_eq!(
        delivered[0].as_ref().unwrap_err().reason(),
        StopReason::Definitive
    );
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn an_open_error_is_retried_as_run_retries_it() {
    let stream = Retry::new(&Policy::AVAILABILITY).stream(|attempt| async move {
        if attempt < 3 {
            return Err(Failure::Cut);
        }
        Ok(testing::stream_of(vec![Ok::<_, Failure>(attempt)]))
    });
    let (delivered, recorded) = testing::scope(testing::collect(stream)).await;
    assert_eq!(delivered.len(), 1);
    assert_eq!(*delivered[0].as_ref().unwrap(), 3);
    assert_eq!(recorded.waits(), [250, 500].map(Duration::from_millis));
}

#[tokio::test]
async fn a_hold_limit_commits_a_preamble_that_never_ends() {
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| async {
            let preamble = vec![Ok::<_, Failure>("ping"); 10];
            Ok::<_, Failure>(testing::stream_of(
                preamble.into_iter().chain([Err(Failure::Cut)]).collect(),
            ))
        })
        .commit_when(|_: &&str| false)
        .hold_limit(3);
    let (delivered, _) = testing::scope(testing::collect(stream)).await;
    // Committed at the third item: all ten delivered once, then the cut ends it.
    assert_eq!(delivered.iter().filter(|item| item.is_ok()).count(), 10);
    assert_eq!(
        delivered.last().unwrap().as_ref().unwrap_err().reason(),
        StopReason::Committed
    );
}

#[tokio::test]
async fn restart_after_commit_runs_its_hook_once_and_the_last_items_are_the_new_attempts() {
    let hooks = AtomicU32::new(0);
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|attempt| async move {
            Ok::<_, Failure>(testing::stream_of(match attempt {
                1 => vec![Ok((1, "a")), Ok((1, "b")), Err(Failure::Cut)],
                2 => vec![Err(Failure::Cut)],
                _ => vec![Ok((attempt, "a")), Ok((attempt, "b")), Ok((attempt, "c"))],
            }))
        })
        .restart_after_commit(|| {
            hooks.fetch_add(1, Ordering::SeqCst);
        });
    let ((outcome, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(180)).run(testing::collect(stream))).await;
    let delivered: Vec<_> = outcome.unwrap().into_iter().map(Result::unwrap).collect();
    assert_eq!(hooks.load(Ordering::SeqCst), 1);
    assert_eq!(
        delivered,
        [(1, "a"), (1, "b"), (3, "a"), (3, "b"), (3, "c")]
    );
    assert_eq!(recorded.waits().len(), 2);
    // One restart (after attempt 1's commit) and one retry (attempt 2 failed before it).
    assert_eq!(report.restarts(), 1);
    assert_eq!(report.retries(), 1);
    assert_eq!(report.attempts(), 3);
    assert_eq!(report.commits(), 1);
}

#[tokio::test]
async fn a_stream_dropped_after_its_commit_point_is_a_finished_call_not_one_in_flight() {
    let (outcome, report) = Turn::new(Duration::from_secs(180))
        .run(async {
            let mut stream = std::pin::pin!(Retry::new(&Policy::AVAILABILITY).stream(|_| async {
                Ok::<_, Failure>(testing::stream_of(vec![Ok::<_, Failure>(1), Ok(2)]))
            }));
            let first =
                std::future::poll_fn(|cx| futures_core::Stream::poll_next(stream.as_mut(), cx))
                    .await;
            first.map(Result::unwrap)
        })
        .await;
    assert_eq!(outcome.unwrap(), Some(1));
    assert_eq!(report.calls(), 1);
    assert!(report.in_flight().is_empty());
    assert_eq!(report.commits(), 1);
}

#[test]
fn a_retried_stream_is_send_and_runs_on_a_multi_thread_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let delivered = runtime.block_on(async {
        let stream = Retry::new(&Policy::AVAILABILITY)
            .stream(|attempt| async move {
                tokio::task::yield_now().await;
                if attempt == 1 {
                    return Err(Failure::Cut);
                }
                Ok(testing::stream_of(vec![Ok::<_, Failure>(attempt)]))
            })
            .commit_when(|_: &u32| true);
        tokio::spawn(testing::scope(testing::collect(stream)))
            .await
            .unwrap()
            .0
    });
    assert_eq!(*delivered[0].as_ref().unwrap(), 2);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_timeout_bounds_a_stream_only_up_to_its_commit_point() {
    use futures_util::StreamExt;
    // A 1 s attempt timeout, and a generation that goes on for 5 s after its first item.
    let timed = Retry::new(&Policy::TRANSIENT).timeout(Duration::from_secs(1));
    let stream = timed.stream(|_| async {
        let items = futures_util::stream::unfold(0, |sent| async move {
            match sent {
                0 => Some((Ok::<_, retry_runtime::TimedOut>("first"), 1)),
                1 => {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    Some((Ok("late"), 2))
                }
                _ => None,
            }
        });
        Ok::<_, retry_runtime::TimedOut>(Box::pin(items))
    });
    let delivered: Vec<_> = stream.collect().await;
    let delivered: Vec<_> = delivered.into_iter().map(Result::unwrap).collect();
    assert_eq!(delivered, ["first", "late"]);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_timeout_ends_a_stream_that_has_not_committed_and_the_policy_decides() {
    let timed = Retry::new(&Policy::AVAILABILITY).timeout(Duration::from_secs(1));
    let stream = timed.stream(|_| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok::<_, retry_runtime::TimedOut>(testing::stream_of(vec![
            Ok::<_, retry_runtime::TimedOut>(1),
        ]))
    });
    let delivered = testing::collect(stream).await;
    let gave_up = delivered.into_iter().next().unwrap().unwrap_err();
    assert_eq!(
        gave_up.error().bound(),
        retry_runtime::TimeoutBound::Timeout
    );
    assert_eq!(
        gave_up.attempts(),
        1,
        "availability does not retry a timeout"
    );
}
