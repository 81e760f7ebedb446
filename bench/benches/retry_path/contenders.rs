//! The retry path's contenders and what is measured of them, shared by the bench
//! (`benches/retry_path.rs`, which times them) and its test (`tests/retry_path.rs`, which
//! asserts the size and heap bounds the bench prints): one definition of each contender, of
//! each measure and of each bound.
//!
//! Each contender calls the same out-of-line operation, which takes no argument (as the
//! independent benchmark's does; an argument of an `async fn` is kept twice by rustc, see
//! [`annotated_with_argument`]), fails with `ConnectionRefused` as often as it is told to,
//! then succeeds. The zero-wait forms wait as little as each
//! library allows (this crate's smallest ladder is 1 ns: its policies refuse a zero base); the
//! parked forms wait ten seconds, so that a call can be caught in its wait.

use std::cell::Cell;
use std::future::Future;
use std::hint::black_box;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use retry_runtime::{GaveUp, Policy, Retry, Turn, retry};
use tokio::runtime::Runtime;

/// What only this crate keeps in a waiting call, besides the failure: its one word for the
/// turn's cancel (the call's reference, through which its flight listens), allowed at two.
pub(crate) const LISTENER_BYTES: usize = 16;

/// What a parked call may weigh on the heap beyond the lightest peer's: tokio's task cell
/// grows with the future it holds.
pub(crate) const PARKED_EXTRA_BYTES: u64 = 64;

/// The step in which tokio sizes a task's cell: the cell is `#[repr(align(128))]` on x86_64
/// and aarch64, so a cell is a multiple of 128 bytes, and a heap of 64 bytes more than a
/// peer's is the next multiple.
pub(crate) const TASK_CELL_STEP: u64 = 128;

/// The most an annotated function's future may be: the smallest peer's, the kept failure (so
/// a turn cancelled during the wait gives up with it) and the listener.
pub(crate) fn future_bound(smallest_peer: usize) -> usize {
    smallest_peer + std::mem::size_of::<io::Error>() + LISTENER_BYTES
}

/// The most `Retry::run`'s future may be: [`future_bound`], and the `Retry` it owns (six
/// words), where the attribute's refers to a `static` one.
pub(crate) fn explicit_future_bound(smallest_peer: usize) -> usize {
    future_bound(smallest_peer) + std::mem::size_of::<Retry>()
}

/// The most a call parked in its wait may weigh on the heap: the lightest peer's and
/// [`PARKED_EXTRA_BYTES`], as tokio can allocate it (in [`TASK_CELL_STEP`]s).
pub(crate) fn parked_bound(lightest_peer: u64) -> u64 {
    (lightest_peer + PARKED_EXTRA_BYTES).next_multiple_of(TASK_CELL_STEP)
}

thread_local! {
    /// How many more attempts of [`op`] fail.
    static FAILURES: Cell<u32> = const { Cell::new(0) };
}

/// The next `n` attempts of [`op`] fail.
pub(crate) fn fail_next(n: u32) {
    FAILURES.with(|failures| failures.set(n));
}

/// The operation's future: ready on its first poll; a `ConnectionRefused` while told to fail.
pub(crate) struct Op;

impl Future for Op {
    type Output = Result<u64, io::Error>;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        let failing = FAILURES.with(|failures| {
            let left = failures.get();
            failures.set(left.saturating_sub(1));
            left > 0
        });
        if failing {
            Poll::Ready(Err(io::Error::from(io::ErrorKind::ConnectionRefused)))
        } else {
            Poll::Ready(Ok(black_box(1)))
        }
    }
}

#[inline(never)]
pub(crate) fn op() -> Op {
    black_box(Op)
}

/// Availability's ladder with its waits brought down to 1 ns.
pub(crate) const ZERO: Policy = Policy::AVAILABILITY
    .with_base(Duration::from_nanos(1))
    .with_cap(Duration::from_nanos(1));

/// Availability's ladder with a ten-second wait: a call stays parked in it.
pub(crate) const PARKED: Policy = Policy::AVAILABILITY
    .with_base(Duration::from_secs(10))
    .with_cap(Duration::from_secs(10))
    .with_max_total_wait(Duration::from_secs(60));

/// The operation, called once: the first try's baseline.
pub(crate) async fn plain() -> Result<u64, io::Error> {
    op().await
}

/// A hand-written loop of up to four attempts, waiting `wait` between them.
async fn hand_loop_waiting(wait: Duration) -> Result<u64, io::Error> {
    let mut attempt = 1;
    // backoff-lint: allow(the hand-written baseline the engine is measured against)
    loop {
        match op().await {
            Ok(value) => return Ok(value),
            Err(error) if attempt >= 4 => return Err(error),
            Err(_) => {
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
        }
    }
}

pub(crate) fn hand_loop() -> impl Future<Output = Result<u64, io::Error>> {
    hand_loop_waiting(Duration::ZERO)
}

pub(crate) fn hand_loop_parked() -> impl Future<Output = Result<u64, io::Error>> {
    hand_loop_waiting(Duration::from_secs(10))
}

#[retry(policy = ZERO)]
pub(crate) async fn annotated() -> Result<u64, io::Error> {
    op().await
}

/// The annotated form with one argument: rustc keeps an `async fn`'s argument twice in its
/// future (as it captured it, and moved into the body), so the future is one `u64` larger than
/// [`annotated`]'s plus the argument; a plain `async fn` pays the same.
#[retry(policy = ZERO)]
pub(crate) async fn annotated_with_argument(x: u64) -> Result<u64, io::Error> {
    op().await.map(|n| n + x)
}

#[retry(policy = PARKED, budget = "turn")]
pub(crate) async fn annotated_parked() -> Result<u64, io::Error> {
    op().await
}

/// The upstream of the two forms on one: nothing to say (no pause, no gate), as on every call
/// of the bench, whose one failure is followed by a success.
pub(crate) static UPSTREAM: retry_runtime::Upstream = retry_runtime::Upstream::new("bench");

/// The parked calls' own upstream: their failures, on the real clock, must not open the
/// measured calls' gate.
pub(crate) static PARKED_UPSTREAM: retry_runtime::Upstream =
    retry_runtime::Upstream::new("bench-parked");

/// The error of a call on an upstream: the operation's, or the upstream's hold.
#[derive(Debug)]
pub(crate) enum OnUpstream {
    Io(io::Error),
    Paused(retry_runtime::UpstreamPaused),
}

impl From<io::Error> for OnUpstream {
    fn from(error: io::Error) -> Self {
        OnUpstream::Io(error)
    }
}

impl From<retry_runtime::UpstreamPaused> for OnUpstream {
    fn from(paused: retry_runtime::UpstreamPaused) -> Self {
        OnUpstream::Paused(paused)
    }
}

impl retry_runtime::Classify for OnUpstream {
    fn classify(&self) -> retry_runtime::Class {
        match self {
            OnUpstream::Io(error) => error.classify(),
            OnUpstream::Paused(paused) => paused.classify(),
        }
    }
}

impl std::fmt::Display for OnUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OnUpstream::Io(error) => error.fmt(f),
            OnUpstream::Paused(paused) => paused.fmt(f),
        }
    }
}

#[retry(policy = ZERO, upstream = UPSTREAM)]
pub(crate) async fn annotated_upstream() -> Result<u64, OnUpstream> {
    Ok(op().await?)
}

#[retry(policy = PARKED, budget = "turn", upstream = PARKED_UPSTREAM)]
pub(crate) async fn annotated_upstream_parked() -> Result<u64, OnUpstream> {
    Ok(op().await?)
}

pub(crate) fn explicit_upstream() -> impl Future<Output = Result<u64, GaveUp<OnUpstream>>> {
    Retry::new(&ZERO)
        .upstream(&UPSTREAM)
        .run(async |_| Ok(op().await?))
}

pub(crate) fn explicit_upstream_parked() -> impl Future<Output = Result<u64, GaveUp<OnUpstream>>> {
    Retry::new(&PARKED)
        .upstream(&PARKED_UPSTREAM)
        .run(async |_| Ok(op().await?))
}

/// `Retry::run` with the upstream rows' error type and no upstream: what `Retry::upstream`
/// adds, apart from what its error type does.
pub(crate) fn explicit_same_error() -> impl Future<Output = Result<u64, GaveUp<OnUpstream>>> {
    Retry::new(&ZERO).run(async |_| Ok(op().await?))
}

pub(crate) fn explicit_same_error_parked() -> impl Future<Output = Result<u64, GaveUp<OnUpstream>>>
{
    Retry::new(&PARKED).run(async |_| Ok(op().await?))
}

/// An upstream whose pacer heard its key's limits, with room to spare: every attempt asks the
/// pacer, and none waits.
pub(crate) static PACED_UPSTREAM: retry_runtime::Upstream =
    retry_runtime::Upstream::new("bench-paced");

#[retry(policy = ZERO, upstream = PACED_UPSTREAM)]
pub(crate) async fn annotated_paced() -> Result<u64, OnUpstream> {
    Ok(op().await?)
}

/// Tell [`PACED_UPSTREAM`] a key of a trillion requests, all left.
pub(crate) fn heard_a_roomy_key() {
    let left = retry_runtime::RateLeft {
        limit: Some(1_000_000_000_000),
        remaining: 1_000_000_000_000,
        reset: Some(std::time::Duration::from_secs(1)),
    };
    PACED_UPSTREAM.heard_limits(retry_runtime::RateSaid {
        requests: Some(left),
        tokens: None,
    });
}

/// An upstream shared with a fleet store (`fleet::Fleet`), on the Redis at
/// `RETRY_BENCH_REDIS` (or none: degraded, which the attempt's path does not see either).
pub(crate) static FLEET_UPSTREAM: retry_runtime::Upstream =
    retry_runtime::Upstream::new("bench-fleet");

#[retry(policy = ZERO, upstream = FLEET_UPSTREAM)]
pub(crate) async fn annotated_fleet() -> Result<u64, OnUpstream> {
    Ok(op().await?)
}

#[retry(policy = PARKED, budget = "turn", upstream = PARKED_UPSTREAM)]
pub(crate) async fn annotated_fleet_parked() -> Result<u64, OnUpstream> {
    Ok(op().await?)
}

/// Share [`FLEET_UPSTREAM`] with a fleet store on a runtime of its own, kept for the process:
/// its subscription and its backstop run there, beside the measured calls.
pub(crate) fn share_with_a_fleet() {
    use retry_runtime::fleet::{Fleet, FleetConfig};
    static STORE: std::sync::OnceLock<(tokio::runtime::Runtime, Fleet)> =
        std::sync::OnceLock::new();
    STORE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("the fleet store's runtime");
        let url =
            std::env::var("RETRY_BENCH_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:1".to_owned());
        let fleet = {
            let _entered = runtime.enter();
            // A long timeout: under callgrind, everything runs fifty times slower.
            let config = FleetConfig::new("bench").timeout(std::time::Duration::from_secs(2));
            // With `RETRY_BENCH_BUDGET`, the fleet's retry budget too: a first try counts as a
            // request toward it, and a retry takes a token. Leases large enough that the
            // bench's retries (zero-length waits, on a paused clock) never wait for one.
            let budget = retry_runtime::fleet::FleetBudget::percent(100)
                .floor(1_000_000)
                .burst(4_000_000)
                .lease(1_000_000);
            let config = match std::env::var_os("RETRY_BENCH_BUDGET") {
                Some(_) => config.retry_budget(budget),
                None => config,
            };
            Fleet::connect(&url, config).expect("a Redis URL")
        };
        fleet.share(&FLEET_UPSTREAM);
        // Connected before the first read, where there is a Redis (30 s: under callgrind).
        let deadline = Instant::now() + Duration::from_secs(30);
        // backoff-lint: allow(the bench waiting, bounded, for the store it started to connect)
        while std::env::var_os("RETRY_BENCH_REDIS").is_some() && !fleet.is_subscribed() {
            assert!(
                Instant::now() < deadline,
                "the fleet store did not connect in 30 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        if std::env::var_os("RETRY_BENCH_BUDGET").is_some() {
            // The budget holds once the store has kept it once: its task runs every 50 ms.
            std::thread::sleep(Duration::from_secs(2));
        }
        (runtime, fleet)
    });
}

/// The upstream rows' error type with no upstream: what an upstream adds, apart from what its
/// error type does.
#[retry(policy = ZERO)]
pub(crate) async fn annotated_same_error() -> Result<u64, OnUpstream> {
    Ok(op().await?)
}

#[retry(policy = PARKED, budget = "turn")]
pub(crate) async fn annotated_same_error_parked() -> Result<u64, OnUpstream> {
    Ok(op().await?)
}

/// An ordered set whose first upstream has nothing to say: a first try reads its word once;
/// the bench's one failure, on it, moves the call to the second. Its gate never opens (each
/// call's failure would count toward it, and its success is the second's), so every call
/// measures one move.
pub(crate) static PRIMARY: retry_runtime::Upstream =
    retry_runtime::Upstream::new("primary").gate_after(u32::MAX, Duration::ZERO);
pub(crate) static SECONDARY: retry_runtime::Upstream = retry_runtime::Upstream::new("secondary");
pub(crate) static ACROSS: retry_runtime::Upstreams =
    retry_runtime::Upstreams::new(&[&PRIMARY, &SECONDARY]);

/// The parked calls' own set, as their own upstream.
static PARKED_PRIMARY: retry_runtime::Upstream = retry_runtime::Upstream::new("parked-primary");
static PARKED_SECONDARY: retry_runtime::Upstream = retry_runtime::Upstream::new("parked-secondary");
static PARKED_ACROSS: retry_runtime::Upstreams =
    retry_runtime::Upstreams::new(&[&PARKED_PRIMARY, &PARKED_SECONDARY]);

#[retry(policy = ZERO, across = ACROSS)]
pub(crate) async fn annotated_across() -> Result<u64, OnUpstream> {
    Ok(op().await?)
}

#[retry(policy = PARKED, budget = "turn", across = PARKED_ACROSS)]
pub(crate) async fn annotated_across_parked() -> Result<u64, OnUpstream> {
    Ok(op().await?)
}

pub(crate) fn explicit_across()
-> impl Future<Output = Result<retry_runtime::Answered<u64>, GaveUp<OnUpstream>>> {
    Retry::new(&ZERO)
        .across(&ACROSS)
        .run(async |_| Ok(op().await?))
}

pub(crate) fn explicit_across_parked()
-> impl Future<Output = Result<retry_runtime::Answered<u64>, GaveUp<OnUpstream>>> {
    // `run_fn`: the parked call is spawned, and rustc cannot prove `Send` for `run`'s closure.
    Retry::new(&PARKED)
        .across(&PARKED_ACROSS)
        .run_fn(|_| async { Ok(op().await?) })
}

pub(crate) fn explicit() -> impl Future<Output = Result<u64, GaveUp<io::Error>>> {
    Retry::new(&ZERO).run(async |_| op().await)
}

pub(crate) fn explicit_parked() -> impl Future<Output = Result<u64, GaveUp<io::Error>>> {
    Retry::new(&PARKED).run(async |_| op().await)
}

fn tokio_retry_waiting(millis: u64) -> impl Future<Output = Result<u64, io::Error>> {
    use tokio_retry::strategy::FixedInterval;
    tokio_retry::Retry::start(FixedInterval::from_millis(millis).take(3), op)
}

pub(crate) fn tokio_retry() -> impl Future<Output = Result<u64, io::Error>> {
    tokio_retry_waiting(0)
}

pub(crate) fn tokio_retry_parked() -> impl Future<Output = Result<u64, io::Error>> {
    tokio_retry_waiting(10_000)
}

/// tokio-retry doing by hand the per-retry work the engine does (issue 57): its condition
/// classifies the error, checks the class against the policy's retried set, counts the
/// attempt, checks the attempt limit and a deadline, and emits one `tracing` event with the
/// attempt, the wait and the class.
fn tokio_retry_same_work_waiting(millis: u64) -> impl Future<Output = Result<u64, io::Error>> {
    use retry_runtime::Classify;
    use tokio_retry::strategy::FixedInterval;
    // No budget, as the engine's rows have none: the clock is read only where a deadline is.
    let deadline: Option<tokio::time::Instant> = black_box(None);
    let wait = Duration::from_millis(millis);
    let mut attempt = 0_u32;
    let condition = move |error: &io::Error| {
        let class = error.classify();
        attempt += 1;
        let retried = ZERO.retries(&class)
            && attempt < ZERO.attempts()
            && deadline.is_none_or(|deadline| tokio::time::Instant::now() + wait < deadline);
        if retried {
            tracing::info!(target: "retry", attempt, wait_ms = millis, class = class.name(), "retrying");
        }
        retried
    };
    tokio_retry::RetryIf::start(FixedInterval::from_millis(millis).take(3), op, condition)
}

pub(crate) fn tokio_retry_same_work() -> impl Future<Output = Result<u64, io::Error>> {
    tokio_retry_same_work_waiting(0)
}

pub(crate) fn tokio_retry_same_work_parked() -> impl Future<Output = Result<u64, io::Error>> {
    tokio_retry_same_work_waiting(10_000)
}

fn backon_waiting(wait: Duration) -> impl Future<Output = Result<u64, io::Error>> {
    use backon::{ConstantBuilder, Retryable};
    (|| op()).retry(
        ConstantBuilder::default()
            .with_delay(wait)
            .with_max_times(3),
    )
}

pub(crate) fn backon() -> impl Future<Output = Result<u64, io::Error>> {
    backon_waiting(Duration::ZERO)
}

pub(crate) fn backon_parked() -> impl Future<Output = Result<u64, io::Error>> {
    backon_waiting(Duration::from_secs(10))
}

fn backoff_waiting(wait: Duration) -> impl Future<Output = Result<u64, io::Error>> {
    let policy = backoff::ExponentialBackoffBuilder::new()
        .with_initial_interval(wait)
        .with_randomization_factor(0.0)
        .build();
    backoff::future::retry(policy, || async {
        op().await.map_err(backoff::Error::transient)
    })
}

pub(crate) fn backoff() -> impl Future<Output = Result<u64, io::Error>> {
    backoff_waiting(Duration::ZERO)
}

pub(crate) fn backoff_parked() -> impl Future<Output = Result<u64, io::Error>> {
    backoff_waiting(Duration::from_secs(10))
}

/// A current-thread runtime on a paused clock, as the independent benchmark runs.
pub(crate) fn paused_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

/// A current-thread runtime on the real clock, on which a parked call stays parked.
pub(crate) fn real_runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
}

/// `calls` calls of `make`, each failing `failures` times first, on `runtime`; the time they
/// took.
pub(crate) fn time_calls<T, E, Fut: Future<Output = Result<T, E>>>(
    runtime: &Runtime,
    make: fn() -> Fut,
    calls: usize,
    failures: u32,
) -> Duration {
    runtime.block_on(async {
        let started = Instant::now();
        for _ in 0..calls {
            fail_next(failures);
            assert!(black_box(make().await).is_ok());
        }
        started.elapsed()
    })
}

/// The fewest allocations of five calls of `make` failing `failures` times, inside a turn of
/// a minute if `in_turn`, less those of the same turn around no call: what the call itself
/// allocates. A few calls first warm the runtime's timer, the RNG and the thread-locals.
pub(crate) fn allocations<T, E, Fut: Future<Output = Result<T, E>>>(
    runtime: &Runtime,
    make: fn() -> Fut,
    failures: u32,
    in_turn: bool,
) -> u64 {
    let count = |call: bool| {
        let counted = allocation_counter::measure(|| {
            fail_next(failures);
            let work = async {
                if call {
                    assert!(make().await.is_ok());
                }
            };
            if in_turn {
                runtime.block_on(Turn::new(Duration::from_secs(60)).run(work));
            } else {
                runtime.block_on(work);
            }
        });
        counted.count_total
    };
    let fewest = |call| {
        (0..3).for_each(|_| {
            count(call);
        });
        (0..5).map(|_| count(call)).min().expect("five calls")
    };
    fewest(true).saturating_sub(fewest(false))
}

/// The heap a call of `make` weighs while parked in its first wait, outside any turn: spawned
/// on `runtime` (on the real clock), polled until it waits, counted, then aborted. A first
/// call warms the runtime's task and timer storage. (In a turn, a call also holds its
/// flight, which no peer has.)
pub(crate) fn parked_heap<T: Send + 'static, Fut: Future<Output = T> + Send + 'static>(
    runtime: &Runtime,
    make: fn() -> Fut,
) -> u64 {
    let park = || {
        let mut handle = None;
        let counted = allocation_counter::measure(|| {
            fail_next(u32::MAX);
            runtime.block_on(async {
                let spawned = tokio::spawn(make());
                // The call runs its first attempt, fails, and parks in its wait.
                for _ in 0..4 {
                    tokio::task::yield_now().await;
                }
                handle = Some(spawned);
            });
        });
        let handle = handle.expect("spawned");
        assert!(!handle.is_finished(), "the call is parked in its wait");
        handle.abort();
        runtime.block_on(async {
            let _ = handle.await;
        });
        fail_next(0);
        counted.bytes_current.max(0) as u64
    };
    park();
    (0..3).map(|_| park()).min().expect("three calls")
}
