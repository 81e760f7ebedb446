//! One `run`, `run_fn` and `stream` on `Retry` and on `TimedRetry`, whatever the placement
//! (issue 57): the forms that had no method before (a timed stream on an upstream or across a
//! set) run on the same driver as the others, and each form gives back what its placement says
//! (the value, or `Answered` with the upstream).

use std::time::Duration;

use retry_runtime::testing;
use retry_runtime::{
    Class, Classify, Policy, Retry, TimedOut, Upstream, UpstreamPaused, Upstreams,
};

#[derive(Debug, thiserror::Error)]
enum Failed {
    #[error("overloaded")]
    Overloaded,
    #[error(transparent)]
    TimedOut(#[from] TimedOut),
    #[error(transparent)]
    Paused(#[from] UpstreamPaused),
}

impl Classify for Failed {
    fn classify(&self) -> Class {
        match self {
            Failed::Overloaded => Class::Unavailable { retry_after: None },
            Failed::TimedOut(timed_out) => timed_out.classify(),
            Failed::Paused(paused) => paused.classify(),
        }
    }
}

/// `transient` retries a timeout, so a hung first attempt is cut and the second answers.
const TIMED: Duration = Duration::from_secs(1);

static KEY: Upstream = Upstream::new("placements-key");
static HUNG: Upstream = Upstream::new("placements-hung");
static QUICK: Upstream = Upstream::new("placements-quick");
static MODELS: Upstreams = Upstreams::new(&[&HUNG, &QUICK]);

#[tokio::test(start_paused = true)]
async fn a_timed_stream_on_an_upstream_is_cut_at_its_timeout_and_retried() {
    let stream = Retry::new(&Policy::TRANSIENT)
        .timeout(TIMED)
        .upstream(&KEY)
        .stream(|attempt| async move {
            if attempt == 1 {
                std::future::pending::<()>().await;
            }
            Ok::<_, Failed>(testing::stream_of(vec![Ok::<_, Failed>(attempt)]))
        });
    let (items, recorded) = testing::scope(testing::collect(stream)).await;
    let items: Vec<u32> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(items, [2], "the second attempt delivered");
    assert_eq!(recorded.waits().len(), 1, "one wait, after the timeout");
}

#[tokio::test(start_paused = true)]
async fn a_timed_stream_across_a_set_moves_from_a_hung_upstream_to_the_next() {
    let stream = Retry::new(&Policy::TRANSIENT)
        .timeout(TIMED)
        .across(&MODELS)
        .stream(|to| async move {
            if to.name() == HUNG.name() {
                std::future::pending::<()>().await;
            }
            Ok::<_, Failed>(testing::stream_of(vec![Ok::<_, Failed>(to.name())]))
        });
    let (items, recorded) = testing::scope(testing::collect(stream)).await;
    let items: Vec<&str> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        items,
        [QUICK.name()],
        "the stream moved to the set's second"
    );
    assert!(recorded.waits().is_empty(), "a move waits nothing");
    HUNG.reset();
}

#[tokio::test(start_paused = true)]
async fn every_form_runs_on_every_placement() {
    static ONE: Upstream = Upstream::new("placements-one");
    static FIRST: Upstream = Upstream::new("placements-first");
    static SECOND: Upstream = Upstream::new("placements-second");
    static SET: Upstreams = Upstreams::new(&[&FIRST, &SECOND]);
    let retry = Retry::new(&Policy::AVAILABILITY);
    let timed = retry.timeout(TIMED);
    let fails_first = async |attempt: u32| match attempt {
        1 => Err(Failed::Overloaded),
        n => Ok(n),
    };
    // No upstream and one upstream: each attempt is given its number.
    assert_eq!(retry.run(fails_first).await.unwrap(), 2);
    assert_eq!(timed.run(fails_first).await.unwrap(), 2);
    assert_eq!(retry.upstream(&ONE).run(fails_first).await.unwrap(), 2);
    assert_eq!(timed.upstream(&ONE).run(fails_first).await.unwrap(), 2);
    let fn_first = |attempt: u32| async move {
        match attempt {
            1 => Err(Failed::Overloaded),
            n => Ok(n),
        }
    };
    assert_eq!(retry.run_fn(fn_first).await.unwrap(), 2);
    assert_eq!(timed.upstream(&ONE).run_fn(fn_first).await.unwrap(), 2);
    // Across a set: each attempt is given its upstream, and the answer names it.
    let by_name = |to: &'static Upstream| async move {
        match to.name() {
            "placements-first" => Err(Failed::Overloaded),
            name => Ok(name),
        }
    };
    let answered = retry.across(&SET).run_fn(by_name).await.unwrap();
    assert_eq!(
        (answered.upstream().name(), *answered.value()),
        ("placements-second", "placements-second")
    );
    let answered = timed.across(&SET).run_fn(by_name).await.unwrap();
    assert_eq!(answered.upstream().name(), "placements-second");
    let answered = timed
        .across(&SET)
        .run(async |to| by_name(to).await)
        .await
        .unwrap();
    assert_eq!(answered.upstream().name(), "placements-second");
    ONE.reset();
    FIRST.reset();
}

/// What a user gets from every placement spawns on a multi-thread runtime: a run's future
/// (`run_fn`, on an upstream and across a set) and a `RetryStream` (on an upstream and across a
/// set, timed), each polled to its end inside `tokio::spawn`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_every_placement_returns_spawns_on_a_multi_thread_runtime() {
    static SPAWNED: Upstream = Upstream::new("placements-spawned");
    static SPAWNED_SET: Upstreams = Upstreams::new(&[&SPAWNED]);
    let retry = Retry::new(&Policy::AVAILABILITY);
    let on = retry
        .upstream(&SPAWNED)
        .run_fn(|attempt| async move { Ok::<_, Failed>(attempt) });
    assert_eq!(tokio::spawn(on).await.unwrap().unwrap(), 1);
    let across = retry
        .across(&SPAWNED_SET)
        .run_fn(|to| async move { Ok::<_, Failed>(to.name()) });
    let answered = tokio::spawn(across).await.unwrap().unwrap();
    assert_eq!(answered.upstream().name(), SPAWNED.name());
    let stream = retry
        .timeout(TIMED)
        .upstream(&SPAWNED)
        .stream(|attempt| async move {
            Ok::<_, Failed>(testing::stream_of(vec![Ok::<_, Failed>(attempt)]))
        });
    let items = tokio::spawn(testing::collect(stream)).await.unwrap();
    assert_eq!(
        items.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [1]
    );
    let stream = retry
        .timeout(TIMED)
        .across(&SPAWNED_SET)
        .stream(|to| async move {
            Ok::<_, Failed>(testing::stream_of(vec![Ok::<_, Failed>(to.name())]))
        });
    let items = tokio::spawn(testing::collect(stream)).await.unwrap();
    assert_eq!(
        items.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [SPAWNED.name()]
    );
}
