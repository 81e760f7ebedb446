//! The retry path's own cost, where no wait can hide it (issue 36): `cargo bench -p
//! retry-bench --bench retry_path`.
//!
//! Each contender calls the same out-of-line operation, whose first attempt fails with
//! `ConnectionRefused` and whose second succeeds, with **zero-length waits** (this crate's
//! smallest ladder, 1 ns, as its policies refuse a zero base), on a current-thread tokio
//! runtime whose clock is paused. 200,000 calls a read; three runs, each reading with every
//! contender in turn (the fastest of three reads kept per run); the table gives the median
//! run's time per call, its ratio to the fastest peer's, the allocations of one call, and the
//! future's size.

use std::future::Future;
use std::hint::black_box;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use retry_runtime::{Policy, Retry, retry};
use tokio::runtime::Runtime;

const CALLS: usize = 200_000;
const RUNS: usize = 3;
const READS_PER_RUN: usize = 3;

thread_local! {
    /// Whether the next attempt of [`op`] fails.
    static FAIL_NEXT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The operation's future: ready on its first poll; a `ConnectionRefused` when told to fail.
struct Op(u64);

impl Future for Op {
    type Output = Result<u64, io::Error>;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        if FAIL_NEXT.with(|fail| fail.replace(false)) {
            Poll::Ready(Err(io::Error::from(io::ErrorKind::ConnectionRefused)))
        } else {
            Poll::Ready(Ok(black_box(self.0) + 1))
        }
    }
}

#[inline(never)]
fn op(x: u64) -> Op {
    Op(black_box(x))
}

/// Availability's ladder with its waits brought down to 1 ns.
const ZERO: Policy = Policy::AVAILABILITY
    .with_base(Duration::from_nanos(1))
    .with_cap(Duration::from_nanos(1));

async fn hand_loop(x: u64) -> Result<u64, io::Error> {
    let mut attempt = 1;
    // backoff-lint: allow(the hand-written baseline the engine is measured against)
    loop {
        match op(x).await {
            Ok(value) => return Ok(value),
            Err(error) if attempt >= 4 => return Err(error),
            Err(_) => {
                tokio::time::sleep(Duration::ZERO).await;
                attempt += 1;
            }
        }
    }
}

#[retry(policy = ZERO)]
async fn annotated(x: u64) -> Result<u64, io::Error> {
    op(x).await
}

fn explicit(x: u64) -> impl Future<Output = Result<u64, retry_runtime::GaveUp<io::Error>>> {
    Retry::new(&ZERO).run(async move |_| op(x).await)
}

fn tokio_retry(x: u64) -> impl Future<Output = Result<u64, io::Error>> {
    use tokio_retry::strategy::FixedInterval;
    tokio_retry::Retry::start(FixedInterval::from_millis(0).take(3), move || op(x))
}

fn backon(x: u64) -> impl Future<Output = Result<u64, io::Error>> {
    use backon::{ConstantBuilder, Retryable};
    (move || op(x)).retry(
        ConstantBuilder::default()
            .with_delay(Duration::ZERO)
            .with_max_times(3),
    )
}

fn backoff(x: u64) -> impl Future<Output = Result<u64, io::Error>> {
    let policy = backoff::ExponentialBackoffBuilder::new()
        .with_initial_interval(Duration::ZERO)
        .with_randomization_factor(0.0)
        .build();
    backoff::future::retry(policy, move || async move {
        op(x).await.map_err(backoff::Error::transient)
    })
}

struct Contender {
    name: &'static str,
    read: fn(&Runtime) -> Duration,
    allocations: u64,
    bytes: usize,
    runs: Vec<Duration>,
}

/// `CALLS` calls of `make`, each failing once, on `runtime`; the time they took.
fn calls<T, E, Fut: Future<Output = Result<T, E>>>(
    runtime: &Runtime,
    make: fn(u64) -> Fut,
) -> Duration {
    runtime.block_on(async {
        let started = Instant::now();
        for i in 0..CALLS {
            FAIL_NEXT.with(|fail| fail.set(true));
            assert!(black_box(make(i as u64).await).is_ok());
        }
        started.elapsed()
    })
}

/// One call's allocations, after a few to warm the runtime's timer and thread-locals.
fn allocations<T, E, Fut: Future<Output = Result<T, E>>>(
    runtime: &Runtime,
    make: fn(u64) -> Fut,
) -> u64 {
    let once = || {
        FAIL_NEXT.with(|fail| fail.set(true));
        let counted = allocation_counter::measure(|| {
            assert!(runtime.block_on(make(1)).is_ok());
        });
        counted.count_total
    };
    (0..3).for_each(|_| {
        once();
    });
    (0..5).map(|_| once()).min().expect("five calls")
}

macro_rules! contender {
    ($runtime:expr, $name:literal, $make:ident) => {
        Contender {
            name: $name,
            read: |runtime| calls(runtime, $make),
            allocations: allocations($runtime, $make),
            bytes: std::mem::size_of_val(&$make(1)),
            runs: Vec::new(),
        }
    };
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let mut contenders = [
        contender!(&runtime, "hand loop + `sleep(ZERO)`", hand_loop),
        contender!(&runtime, "`#[retry]`", annotated),
        contender!(&runtime, "`Retry::run`", explicit),
        contender!(&runtime, "tokio-retry 0.3", tokio_retry),
        contender!(&runtime, "backon 1.6", backon),
        contender!(&runtime, "backoff 0.4", backoff),
    ];
    // One read of one contender, for an instruction count:
    // `RETRY_PATH_ONCE=2 valgrind --tool=callgrind target/release/deps/retry_path-*`.
    if let Some(which) = std::env::var("RETRY_PATH_ONCE")
        .ok()
        .and_then(|at| at.parse::<usize>().ok())
    {
        println!("{:?}", (contenders[which].read)(&runtime));
        return;
    }
    for _ in 0..RUNS {
        for contender in &mut contenders {
            let fastest = (0..READS_PER_RUN)
                .map(|_| (contender.read)(&runtime))
                .min()
                .expect("a read");
            contender.runs.push(fastest);
        }
    }
    let median = |contender: &Contender| {
        let mut runs = contender.runs.clone();
        runs.sort();
        runs[runs.len() / 2].as_nanos() as f64 / CALLS as f64
    };
    let fastest_peer = contenders[3..]
        .iter()
        .map(median)
        .min_by(f64::total_cmp)
        .expect("peers");
    println!();
    println!(
        "One retry, zero-length waits, paused clock: {CALLS} calls a read, median of {RUNS} runs (fastest of {READS_PER_RUN} reads each)"
    );
    println!();
    println!(
        "| contender | one retry | x the fastest peer | allocations a call | future bytes | ns of each run |"
    );
    println!("|---|---:|---:|---:|---:|---|");
    for contender in &contenders {
        let each: Vec<String> = contender
            .runs
            .iter()
            .map(|run| format!("{:.0}", run.as_nanos() as f64 / CALLS as f64))
            .collect();
        println!(
            "| {} | {:.1} ns | {:.2} | {} | {} | {} |",
            contender.name,
            median(contender),
            median(contender) / fastest_peer,
            contender.allocations,
            contender.bytes,
            each.join(", "),
        );
    }
}
