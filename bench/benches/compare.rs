//! Issue 12's table, in one process and one run: `cargo bench -p retry-bench`.
//!
//! Every contender wraps the same trivial operation, [`op`], kept out of line (its constructor
//! and its `poll` are `#[inline(never)]`, as a real I/O call is), and runs on a current-thread
//! tokio runtime:
//!
//! - the baseline: a plain call, and a hand-written loop with `tokio::time::sleep`;
//! - this crate: the `#[retry]` attribute and `Retry::new(&P).run(async move |_| ...)`;
//! - the peers: tokio-retry 0.3, backon 1.x, backoff 0.4.
//!
//! Columns:
//!
//! - **first try**: criterion times a call whose first attempt succeeds, on a runtime whose
//!   clock runs; its allocations are counted too.
//! - **future bytes**: `size_of_val` of the un-polled future.
//! - **one retry**: the first attempt fails (`ConnectionRefused`), the second succeeds. The
//!   runtime's clock is paused, so every wait (each library's own `tokio::time::sleep`) ends as
//!   soon as the runtime is idle: the wait costs a timer registration and a clock advance,
//!   never wall time. Allocations are counted while the call is built and polled; criterion
//!   times it; this crate's two forms are also timed and counted inside a `Turn`.
//! - **heap per call parked in a wait**: 100,000 calls spawned on one (paused) runtime, each
//!   failed once and parked in its wait; the bytes still allocated, divided by 100,000
//!   (tokio's task cell, which holds the future, included).
//!
//! Timings come from criterion's samples: the table shows, of the measured samples, the
//! fastest sample's time per call (each sample averages thousands of calls). Other processes on
//! a shared machine only ever add time, so the fastest sample is the least disturbed one;
//! criterion's own report, above the table, has its estimate and confidence interval.
//! Allocations are counted with `allocation-counter`, whose counting `#[global_allocator]`
//! serves this whole binary (criterion's timings included: each allocation pays a
//! thread-local counter update, the same for every contender).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::{Future, poll_fn};
use std::hint::black_box;
use std::io;
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use retry_runtime::{Policy, Retry, Turn, retry};
use tokio::runtime::Runtime;

/// Criterion's samples per benchmark; the table's figure is the fastest of exactly these.
const SAMPLES: usize = 30;
/// Calls in flight for the parked-heap column.
const PARKED: usize = 100_000;
/// A turn that never ends during a run, for the in-turn figures (a paused clock skips
/// ~250 ms per retry, so a run covers hours of virtual time).
const LONG_TURN: Duration = Duration::from_secs(10 * 365 * 86_400);

// ---------------------------------------------------------------------------------------------
// The operation
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// How many more attempts of [`op`] fail: 0 for a first-try success, 1 for one retry,
    /// `u32::MAX` for a call that parks in its wait.
    static FAILS_LEFT: Cell<u32> = const { Cell::new(0) };
    /// How many attempts of [`op`] have failed on this thread.
    static FAILURES: Cell<u64> = const { Cell::new(0) };
}

fn fail_next(attempts: u32) {
    FAILS_LEFT.with(|left| left.set(attempts));
}

fn failures() -> u64 {
    FAILURES.with(Cell::get)
}

/// The operation's future: ready on its first poll, with `x + 1` or, while `FAILS_LEFT` says
/// so, a `ConnectionRefused` (which every library retries; `io::Error` of a kind does not
/// allocate).
struct Op {
    x: u64,
}

impl Future for Op {
    type Output = Result<u64, io::Error>;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        let fails = FAILS_LEFT.with(|left| match left.get() {
            0 => false,
            n => {
                left.set(n - 1);
                true
            }
        });
        if fails {
            FAILURES.with(|count| count.set(count.get() + 1));
            Poll::Ready(Err(io::Error::from(io::ErrorKind::ConnectionRefused)))
        } else {
            Poll::Ready(Ok(black_box(self.x) + 1))
        }
    }
}

/// The trivial operation every contender calls.
#[inline(never)]
fn op(x: u64) -> Op {
    Op { x: black_box(x) }
}

// ---------------------------------------------------------------------------------------------
// The contenders: each builds one call's future from the same argument
// ---------------------------------------------------------------------------------------------

/// The plain call: the baseline of the first try and of the future's size.
async fn plain(x: u64) -> Result<u64, io::Error> {
    op(x).await
}

/// A hand-written loop with `tokio::time::sleep`, availability's ladder without jitter: the
/// baseline of one retry and of a call parked in its wait.
async fn hand_loop(x: u64) -> Result<u64, io::Error> {
    let mut wait = Duration::from_millis(250);
    let mut attempt = 1;
    // backoff-lint: allow(the hand-written baseline the engine is measured against)
    loop {
        match op(x).await {
            Ok(value) => return Ok(value),
            Err(error) if attempt >= 4 => return Err(error),
            Err(_) => {
                tokio::time::sleep(wait).await;
                wait *= 2;
                attempt += 1;
            }
        }
    }
}

/// A control, not a contender: the hand-written loop with its sleep boxed, as this crate's
/// wait is, and its future padded to the attribute's size. Its first try is what moving a
/// future of that size costs; its parked heap is the least a wait in a box can cost.
async fn control(x: u64) -> Result<u64, io::Error> {
    let pad = [black_box(0u64); CONTROL_PAD];
    let mut wait = Duration::from_millis(250);
    let mut attempt = 1;
    // backoff-lint: allow(the hand-written baseline the engine is measured against)
    let result = loop {
        match op(x).await {
            Ok(value) => break Ok(value),
            Err(error) if attempt >= 4 => break Err(error),
            Err(_) => {
                Box::pin(tokio::time::sleep(wait)).await;
                wait *= 2;
                attempt += 1;
            }
        }
    };
    black_box(&pad);
    result
}

/// Words of padding that bring [`control`]'s future to the attribute's size (checked in
/// `main`). The `spans` feature adds two words to the attribute's (the call's spans box and
/// the attempt's span box).
const CONTROL_PAD: usize = if cfg!(feature = "spans") { 5 } else { 3 };

/// The attribute, availability's policy.
#[retry(policy = "availability")]
async fn annotated(x: u64) -> Result<u64, io::Error> {
    op(x).await
}

/// The explicit API in the README's form, the same policy.
fn explicit(x: u64) -> impl Future<Output = Result<u64, retry_runtime::GaveUp<io::Error>>> {
    Retry::new(&Policy::AVAILABILITY).run(async move |_| op(x).await)
}

/// Configuration made at run time, once per process: the policy shared through an `Arc`
/// and the name an `Arc<str>`, each call holding a clone of both.
static CONFIGURED: std::sync::LazyLock<(std::sync::Arc<Policy>, std::sync::Arc<str>)> =
    std::sync::LazyLock::new(|| {
        (
            std::sync::Arc::new(Policy::AVAILABILITY),
            std::sync::Arc::from("model"),
        )
    });

/// The explicit API with that configuration: two reference-count increments a call.
fn configured(x: u64) -> impl Future<Output = Result<u64, retry_runtime::GaveUp<io::Error>>> {
    let (policy, name) = &*CONFIGURED;
    Retry::new(std::sync::Arc::clone(policy))
        .named_owned(std::sync::Arc::clone(name))
        .run(async move |_| op(x).await)
}

/// tokio-retry 0.3: waits of 250, 500, 1000 ms, full jitter, three retries.
fn tokio_retry(x: u64) -> impl Future<Output = Result<u64, io::Error>> {
    use tokio_retry::strategy::{ExponentialBackoff, jitter};
    tokio_retry::Retry::start(
        ExponentialBackoff::from_millis(2)
            .factor(125)
            .map(jitter)
            .take(3),
        move || op(x),
    )
}

/// backon 1.x: waits from 250 ms, doubling, jitter, three retries; its default sleeper is
/// `tokio::time::sleep`.
fn backon(x: u64) -> impl Future<Output = Result<u64, io::Error>> {
    use backon::{ExponentialBuilder, Retryable};
    (move || op(x)).retry(
        ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(250))
            .with_max_times(3)
            .with_jitter(),
    )
}

/// backoff 0.4: waits from 250 ms, doubling, ±50 % jitter; its `tokio` feature sleeps with
/// `tokio::time::sleep`.
fn backoff(x: u64) -> impl Future<Output = Result<u64, io::Error>> {
    let policy = backoff::ExponentialBackoffBuilder::new()
        .with_initial_interval(Duration::from_millis(250))
        .with_multiplier(2.0)
        .with_randomization_factor(0.5)
        .build();
    backoff::future::retry(policy, move || async move {
        op(x).await.map_err(backoff::Error::transient)
    })
}

// ---------------------------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------------------------

fn runtime(paused: bool) -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(paused)
        .build()
        .expect("a current-thread runtime")
}

/// Each benchmark's samples: (iterations, time), in the order criterion took them.
type Samples = Rc<RefCell<BTreeMap<String, Vec<(u64, Duration)>>>>;

/// The fastest of the last `SAMPLES` samples (criterion's measured ones; the warm-up's come
/// first), as time per call in nanoseconds.
fn fastest_ns(samples: &Samples, key: &str) -> Option<f64> {
    let samples = samples.borrow();
    let all = samples.get(key)?;
    all[all.len().saturating_sub(SAMPLES)..]
        .iter()
        .map(|(iters, time)| time.as_nanos() as f64 / *iters as f64)
        .min_by(f64::total_cmp)
}

/// Whether to time the call inside a [`Turn`] (one turn around each sample's calls, so the
/// turn's own setup is not counted).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    Outside,
    InTurn,
}

/// Time `make`'s calls, each with `fails` failing attempts, and keep the samples under `key`.
#[allow(clippy::too_many_arguments)]
fn time<Fut: Future>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    runtime: &Runtime,
    samples: &Samples,
    key: &str,
    name: &str,
    fails: u32,
    place: Where,
    make: fn(u64) -> Fut,
) {
    group.bench_function(name, |b| {
        b.to_async(runtime).iter_custom(|iters| {
            let samples = Rc::clone(samples);
            let key = key.to_owned();
            async move {
                let calls = async move {
                    let start = Instant::now();
                    for _ in 0..iters {
                        fail_next(fails);
                        black_box(make(black_box(1)).await);
                    }
                    start.elapsed()
                };
                let elapsed = match place {
                    Where::Outside => calls.await,
                    Where::InTurn => {
                        let (outcome, _report) = Turn::new(LONG_TURN).run(calls).await;
                        outcome.into_finished().expect("the turn outlives the run")
                    }
                };
                samples
                    .borrow_mut()
                    .entry(key)
                    .or_default()
                    .push((iters, elapsed));
                elapsed
            }
        })
    });
}

/// Allocations: how many, and their bytes in all.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Allocated {
    count: u64,
    bytes: u64,
}

impl Allocated {
    fn add(&mut self, info: allocation_counter::AllocationInfo) {
        self.count += info.count_total;
        self.bytes += info.bytes_total;
    }
}

impl std::fmt::Display for Allocated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.count {
            0 => write!(f, "0"),
            n => write!(f, "{n} ({} B)", self.bytes),
        }
    }
}

/// Build and run one call, counting the allocations made while it is built and while it is
/// polled (not the runtime's work between polls, nor the turn's setup around it).
async fn counted<T, E, Fut: Future<Output = Result<T, E>>>(
    make: fn(u64) -> Fut,
) -> (bool, Allocated) {
    let mut allocated = Allocated { count: 0, bytes: 0 };
    let mut built = None;
    allocated.add(allocation_counter::measure(|| {
        built = Some(make(black_box(1)));
    }));
    let allocated = Cell::new(allocated);
    let mut call = pin!(built.expect("built"));
    let output = poll_fn(|cx| {
        let mut poll = Poll::Pending;
        let mut sum = allocated.get();
        sum.add(allocation_counter::measure(|| {
            poll = call.as_mut().poll(cx)
        }));
        allocated.set(sum);
        poll
    })
    .await;
    (output.is_ok(), allocated.get())
}

/// The fewest allocations of a call with `fails` failing attempts over a few runs (after
/// warming the runtime and the thread-locals), checking that it failed exactly `fails` times
/// and then succeeded.
fn allocations<T, E, Fut: Future<Output = Result<T, E>>>(
    runtime: &Runtime,
    name: &str,
    fails: u32,
    place: Where,
    make: fn(u64) -> Fut,
) -> Allocated {
    let once = || {
        fail_next(fails);
        let before = failures();
        let (ok, count) = match place {
            Where::Outside => runtime.block_on(counted(make)),
            Where::InTurn => runtime
                .block_on(Turn::new(LONG_TURN).run(counted(make)))
                .0
                .into_finished()
                .expect("the turn outlives the call"),
        };
        assert!(ok, "{name}: the call did not succeed");
        assert_eq!(
            failures() - before,
            u64::from(fails),
            "{name}: wrong attempts"
        );
        count
    };
    for _ in 0..3 {
        once();
    }
    (0..5).map(|_| once()).min().expect("five runs")
}

/// The heap each call holds while parked in its wait: [`PARKED`] calls spawned on a fresh
/// paused runtime, each failed once; the bytes still allocated once every call has failed,
/// per call. A first round, aborted, grows the runtime's queues, so the measured round pays
/// only for its calls.
fn parked_heap<Fut>(name: &str, make: fn(u64) -> Fut) -> f64
where
    Fut: Future + Send + 'static,
    Fut::Output: Send + 'static,
{
    let runtime = runtime(true);
    let mut handles = Vec::with_capacity(PARKED);
    fail_next(u32::MAX);
    let round = |handles: &mut Vec<tokio::task::JoinHandle<Fut::Output>>| {
        let before = failures();
        let started = runtime.block_on(async { tokio::time::Instant::now() });
        let info = allocation_counter::measure(|| {
            runtime.block_on(async {
                for i in 0..PARKED {
                    handles.push(tokio::spawn(make(i as u64)));
                }
                // Every call fails its first attempt in its first poll and parks in its wait
                // before the scheduler comes back here; the paused clock does not move while
                // this task keeps yielding.
                while failures() - before < PARKED as u64 {
                    tokio::task::yield_now().await;
                }
            });
        });
        runtime.block_on(async {
            assert_eq!(
                tokio::time::Instant::now(),
                started,
                "{name}: the clock moved"
            );
            assert_eq!(
                failures() - before,
                PARKED as u64,
                "{name}: a wait ended early"
            );
            for handle in handles.drain(..) {
                handle.abort();
                assert!(handle.await.is_err(), "{name}: a call finished");
            }
        });
        info.bytes_current as f64 / PARKED as f64
    };
    round(&mut handles);
    let per_call = round(&mut handles);
    fail_next(0);
    per_call
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

/// One row: one contender's figures.
struct Row {
    name: &'static str,
    first_try_key: &'static str,
    bytes: usize,
    first_try_allocations: Allocated,
    retry_key: &'static str,
    retry_allocations: Allocated,
    /// This crate's forms: the in-turn figures.
    in_turn: Option<(&'static str, Allocated)>,
    parked: f64,
    /// How the wait was neutralised.
    wait: &'static str,
}

fn ratio(value: Option<f64>, base: Option<f64>) -> Option<f64> {
    Some(value? / base?)
}

fn show_ns(ns: Option<f64>) -> String {
    match ns {
        None => "—".to_owned(),
        Some(ns) if ns >= 1_000.0 => format!("{:.2} µs", ns / 1_000.0),
        Some(ns) => format!("{ns:.1} ns"),
    }
}

fn show_ratio(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "—".to_owned(), |r| format!("{r:.2}"))
}

fn main() {
    let mut criterion = Criterion::default()
        .sample_size(SAMPLES)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .without_plots()
        .configure_from_args();
    let samples = Samples::default();
    let running = runtime(false);
    let paused = runtime(true);

    // The timings. Keys name (column, contender).
    {
        let mut group = criterion.benchmark_group("first_try");
        let g = &mut group;
        let s = &samples;
        let r = &running;
        time(
            g,
            r,
            s,
            "first/plain",
            "plain call",
            0,
            Where::Outside,
            plain,
        );
        time(
            g,
            r,
            s,
            "first/attr",
            "#[retry]",
            0,
            Where::Outside,
            annotated,
        );
        time(
            g,
            r,
            s,
            "first/run",
            "Retry::run",
            0,
            Where::Outside,
            explicit,
        );
        time(
            g,
            r,
            s,
            "first/configured",
            "Retry::run, configured",
            0,
            Where::Outside,
            configured,
        );
        time(
            g,
            r,
            s,
            "first/control",
            "control",
            0,
            Where::Outside,
            control,
        );
        time(
            g,
            r,
            s,
            "first/tokio-retry",
            "tokio-retry",
            0,
            Where::Outside,
            tokio_retry,
        );
        time(g, r, s, "first/backon", "backon", 0, Where::Outside, backon);
        time(
            g,
            r,
            s,
            "first/backoff",
            "backoff",
            0,
            Where::Outside,
            backoff,
        );
        group.finish();
    }
    {
        let mut group = criterion.benchmark_group("one_retry_paused_clock");
        let g = &mut group;
        let s = &samples;
        let p = &paused;
        time(
            g,
            p,
            s,
            "retry/loop",
            "hand loop",
            1,
            Where::Outside,
            hand_loop,
        );
        time(
            g,
            p,
            s,
            "retry/attr",
            "#[retry]",
            1,
            Where::Outside,
            annotated,
        );
        time(
            g,
            p,
            s,
            "retry/run",
            "Retry::run",
            1,
            Where::Outside,
            explicit,
        );
        time(
            g,
            p,
            s,
            "retry/configured",
            "Retry::run, configured",
            1,
            Where::Outside,
            configured,
        );
        time(
            g,
            p,
            s,
            "retry/attr/turn",
            "#[retry] in a turn",
            1,
            Where::InTurn,
            annotated,
        );
        time(
            g,
            p,
            s,
            "retry/run/turn",
            "Retry::run in a turn",
            1,
            Where::InTurn,
            explicit,
        );
        time(
            g,
            p,
            s,
            "retry/control",
            "control",
            1,
            Where::Outside,
            control,
        );
        time(
            g,
            p,
            s,
            "retry/tokio-retry",
            "tokio-retry",
            1,
            Where::Outside,
            tokio_retry,
        );
        time(g, p, s, "retry/backon", "backon", 1, Where::Outside, backon);
        time(
            g,
            p,
            s,
            "retry/backoff",
            "backoff",
            1,
            Where::Outside,
            backoff,
        );
        group.finish();
    }
    criterion.final_summary();

    // Sizes, allocations and parked heap, measured directly.
    let plain_bytes = std::mem::size_of_val(&plain(1));
    let loop_bytes = std::mem::size_of_val(&hand_loop(1));
    let rows = [
        Row {
            name: "plain call / hand-written loop",
            first_try_key: "first/plain",
            bytes: plain_bytes,
            first_try_allocations: allocations(&running, "plain", 0, Where::Outside, plain),
            retry_key: "retry/loop",
            retry_allocations: allocations(&paused, "loop", 1, Where::Outside, hand_loop),
            in_turn: None,
            parked: parked_heap("loop", hand_loop),
            wait: "`tokio::time::sleep` on the paused clock",
        },
        Row {
            name: "`#[retry]`",
            first_try_key: "first/attr",
            bytes: std::mem::size_of_val(&annotated(1)),
            first_try_allocations: allocations(&running, "attr", 0, Where::Outside, annotated),
            retry_key: "retry/attr",
            retry_allocations: allocations(&paused, "attr", 1, Where::Outside, annotated),
            in_turn: Some((
                "retry/attr/turn",
                allocations(&paused, "attr in turn", 1, Where::InTurn, annotated),
            )),
            parked: parked_heap("attr", annotated),
            wait: "`TokioClock::sleep` (`tokio::time::sleep`) on the paused clock",
        },
        Row {
            name: "`Retry::new(..).run(..)`",
            first_try_key: "first/run",
            bytes: std::mem::size_of_val(&explicit(1)),
            first_try_allocations: allocations(&running, "run", 0, Where::Outside, explicit),
            retry_key: "retry/run",
            retry_allocations: allocations(&paused, "run", 1, Where::Outside, explicit),
            in_turn: Some((
                "retry/run/turn",
                allocations(&paused, "run in turn", 1, Where::InTurn, explicit),
            )),
            parked: parked_heap("run", explicit),
            wait: "`TokioClock::sleep` (`tokio::time::sleep`) on the paused clock",
        },
        Row {
            name: "`Retry::new(Arc<Policy>).named_owned(Arc<str>).run(..)`",
            first_try_key: "first/configured",
            bytes: std::mem::size_of_val(&configured(1)),
            first_try_allocations: allocations(
                &running,
                "configured",
                0,
                Where::Outside,
                configured,
            ),
            retry_key: "retry/configured",
            retry_allocations: allocations(&paused, "configured", 1, Where::Outside, configured),
            in_turn: None,
            parked: parked_heap("configured", configured),
            wait: "`TokioClock::sleep` (`tokio::time::sleep`) on the paused clock",
        },
        outside_row(
            (&running, &paused),
            "control: hand loop, sleep boxed, future padded to `#[retry]`'s",
            ["first/control", "retry/control"],
            control,
            "`Box::pin(tokio::time::sleep)` on the paused clock",
        ),
        outside_row(
            (&running, &paused),
            "tokio-retry 0.3",
            ["first/tokio-retry", "retry/tokio-retry"],
            tokio_retry,
            "`tokio::time::sleep_until` on the paused clock",
        ),
        outside_row(
            (&running, &paused),
            "backon 1.6",
            ["first/backon", "retry/backon"],
            backon,
            "its default `TokioSleeper` (`tokio::time::sleep`) on the paused clock",
        ),
        outside_row(
            (&running, &paused),
            "backoff 0.4",
            ["first/backoff", "retry/backoff"],
            backoff,
            "its `tokio` feature's `tokio::time::sleep` on the paused clock (its elapsed-time limit reads `std::time::Instant`, far from its 15 min)",
        ),
    ];

    assert_eq!(
        rows[4].bytes, rows[1].bytes,
        "adjust CONTROL_PAD: the control's future is not the attribute's size"
    );
    print!("{}", table(&samples, &rows, loop_bytes));
}

/// A row measured outside any turn only (the control and the peers), on the running and the
/// paused runtime; `keys` name its first-try and one-retry timings.
fn outside_row<Fut>(
    (running, paused): (&Runtime, &Runtime),
    name: &'static str,
    keys: [&'static str; 2],
    make: fn(u64) -> Fut,
    wait: &'static str,
) -> Row
where
    Fut: Future<Output = Result<u64, io::Error>> + Send + 'static,
{
    let [first_try_key, retry_key] = keys;
    Row {
        name,
        first_try_key,
        bytes: std::mem::size_of_val(&make(1)),
        first_try_allocations: allocations(running, name, 0, Where::Outside, make),
        retry_key,
        retry_allocations: allocations(paused, name, 1, Where::Outside, make),
        in_turn: None,
        parked: parked_heap(name, make),
        wait,
    }
}

/// The markdown table, the notes on waits, and the goals of issue 12, met or missed.
fn table(samples: &Samples, rows: &[Row], loop_bytes: usize) -> String {
    let base = &rows[0];
    let first_base = fastest_ns(samples, base.first_try_key);
    let retry_base = fastest_ns(samples, base.retry_key);
    let mut out = String::new();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "| | first try: time, × plain call | first try: allocations | future bytes | one retry at zero wait: allocations (bytes) | one retry: time, × hand-written loop (in a turn) | heap per call parked in a wait |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for (i, row) in rows.iter().enumerate() {
        let first = fastest_ns(samples, row.first_try_key);
        let retry = fastest_ns(samples, row.retry_key);
        let bytes = if i == 0 {
            format!("{} (loop: {loop_bytes})", row.bytes)
        } else {
            format!("{} (+{})", row.bytes, row.bytes as i64 - base.bytes as i64)
        };
        let (retry_allocations, retry_time) = match row.in_turn {
            None => (
                row.retry_allocations.to_string(),
                format!(
                    "{}, {}",
                    show_ns(retry),
                    show_ratio(ratio(retry, retry_base))
                ),
            ),
            Some((key, allocations)) => {
                let in_turn = fastest_ns(samples, key);
                (
                    format!("{}; in a turn {allocations}", row.retry_allocations),
                    format!(
                        "{}, {} ({}, {})",
                        show_ns(retry),
                        show_ratio(ratio(retry, retry_base)),
                        show_ns(in_turn),
                        show_ratio(ratio(in_turn, retry_base)),
                    ),
                )
            }
        };
        let parked = if i == 0 {
            format!("{:.0} B", row.parked)
        } else {
            format!("{:.0} B (+{:.0})", row.parked, row.parked - base.parked)
        };
        let _ = writeln!(
            out,
            "| {} | {}, {} | {} | {} | {} | {} | {} |",
            row.name,
            show_ns(first),
            show_ratio(ratio(first, first_base)),
            row.first_try_allocations,
            bytes,
            retry_allocations,
            retry_time,
            parked,
        );
    }

    let _ = writeln!(out, "\nHow each wait was neutralised:\n");
    for row in rows {
        let _ = writeln!(out, "- {}: {}", row.name, row.wait);
    }

    let _ = writeln!(out, "\nIssue 12's goals, on this run:\n");
    let verdict = |met: bool| if met { "meets" } else { "MISSES" };
    for row in &rows[1..4] {
        let first = ratio(fastest_ns(samples, row.first_try_key), first_base);
        let retry = ratio(fastest_ns(samples, row.retry_key), retry_base);
        let in_turn = row
            .in_turn
            .and_then(|(key, _)| ratio(fastest_ns(samples, key), retry_base));
        let goals = [
            (
                "first try ≤ 1.2× the plain call",
                first.is_some_and(|r| r <= 1.2),
                format!("{}×", show_ratio(first)),
            ),
            (
                "first try without allocation",
                row.first_try_allocations.count == 0,
                row.first_try_allocations.to_string(),
            ),
            (
                "one retry ≤ 1 allocation",
                row.retry_allocations.count <= 1,
                row.retry_allocations.to_string(),
            ),
            (
                "one retry ≤ 1.2× the hand loop",
                retry.is_some_and(|r| r <= 1.2),
                format!("{}×; in a turn {}×", show_ratio(retry), show_ratio(in_turn)),
            ),
            (
                "parked heap ≤ the hand loop's + 64 B",
                row.parked <= base.parked + 64.0,
                format!("+{:.0} B", row.parked - base.parked),
            ),
        ];
        for (goal, met, figure) in goals {
            let _ = writeln!(out, "- {} {goal}: {} ({figure})", row.name, verdict(met));
        }
    }
    let attr = &rows[1];
    let run = &rows[2];
    let _ = writeln!(
        out,
        "- `#[retry]` future ≤ plain + 64 bytes: {} (+{})",
        verdict(attr.bytes <= base.bytes + 64),
        attr.bytes as i64 - base.bytes as i64,
    );
    let retry_bytes = std::mem::size_of::<Retry>();
    let _ = writeln!(
        out,
        "- `Retry::run` future ≤ the attribute's + one `Retry` ({retry_bytes} bytes): {} ({} vs {})",
        verdict(run.bytes <= attr.bytes + retry_bytes),
        run.bytes,
        attr.bytes + retry_bytes,
    );
    out
}
