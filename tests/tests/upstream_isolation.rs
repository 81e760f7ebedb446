//! Under `testing::scope`, each scope keeps its own state for every upstream: tests that run
//! in parallel and call annotated functions on one `static` upstream never see each other's
//! pauses or gates.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use retry_runtime::{Class, Classify, Upstream, UpstreamPaused, retry, testing};

#[derive(Debug, thiserror::Error)]
enum Failed {
    #[error("rate limited")]
    Limited(Duration),
    #[error(transparent)]
    Paused(#[from] UpstreamPaused),
}

impl Classify for Failed {
    fn classify(&self) -> Class {
        match self {
            Failed::Limited(after) => Class::RateLimited {
                retry_after: Some(*after),
            },
            Failed::Paused(paused) => paused.classify(),
        }
    }
}

static KEY: Upstream = Upstream::new("isolated-key");

/// One attempt, refused with a 10 s hint: it pauses `KEY` for every call that sees it.
#[retry(policy = "availability", attempts = 1, upstream = KEY)]
async fn refused() -> Result<(), Failed> {
    Err(Failed::Limited(Duration::from_secs(10)))
}

#[retry(policy = "availability", upstream = KEY)]
async fn answered() -> Result<&'static str, Failed> {
    Ok("answered")
}

/// Set once the paused test has paused `KEY` in its scope; the other test runs its call
/// after, while the pause is still on there.
static PAUSED: AtomicBool = AtomicBool::new(false);
static CHECKED: AtomicBool = AtomicBool::new(false);

/// Wait, a little at a time and at most a few seconds of real time, for `flag`: a test run
/// alone (`--test-threads=1`) goes on without it.
async fn until(flag: &AtomicBool) {
    for _ in 0..200 {
        if flag.load(Ordering::Acquire) {
            return;
        }
        tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(10)))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_in_one_scope_holds_that_scopes_calls() {
    let ((refused, answered), recorded) = testing::scope(async {
        let refused = refused().await;
        PAUSED.store(true, Ordering::Release);
        // The other test's call runs now, in its own scope.
        until(&CHECKED).await;
        (refused, answered().await)
    })
    .await;
    assert!(matches!(refused, Err(Failed::Limited(_))), "{refused:?}");
    assert_eq!(answered.unwrap(), "answered");
    // The second call waited for the pause its scope was told of (less the real time the
    // other test took).
    let [wait] = recorded.waits() else {
        panic!("one wait: {recorded:?}");
    };
    assert!(
        *wait > Duration::from_secs(5) && *wait <= Duration::from_secs(10),
        "{wait:?}"
    );
    // The process's own state never saw it.
    assert_eq!(KEY.paused_for(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_in_another_scope_is_never_held_by_it() {
    until(&PAUSED).await;
    let (answer, recorded) = testing::scope(answered()).await;
    CHECKED.store(true, Ordering::Release);
    assert_eq!(answer.unwrap(), "answered");
    assert_eq!(recorded.waits(), [], "never held by the other test's pause");
}
