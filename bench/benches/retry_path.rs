//! The retry path's own cost, where no wait can hide it (issue 36): `cargo bench -p
//! retry-bench --bench retry_path`.
//!
//! Every contender (`retry_path/contenders.rs`) on a current-thread tokio runtime whose clock
//! is paused, with zero-length waits. 200,000 calls a read; three runs, each reading every
//! contender in turn (the fastest of three reads kept per run); the table gives the median
//! run's time per call. Beside the times, from the same build: the future's size, the
//! allocations of one call (outside a turn with one retry; inside a turn with one and with
//! three retries), and the heap of a call parked in its wait; then the bounds, and whether
//! each goal is met.

#[path = "retry_path/contenders.rs"]
mod contenders;

use std::future::Future;
use std::time::Duration;

use contenders::*;
use tokio::runtime::Runtime;

const CALLS: usize = 200_000;
const RUNS: usize = 3;
const READS_PER_RUN: usize = 3;

struct Contender {
    name: &'static str,
    /// Whether it is one of the peers the goals compare with.
    peer: bool,
    /// `CALLS` calls failing once; `CALLS` calls succeeding at once.
    read_retry: fn(&Runtime) -> Duration,
    read_first: fn(&Runtime) -> Duration,
    bytes: usize,
    allocations: [u64; 3],
    parked: u64,
    retry_runs: Vec<Duration>,
    first_runs: Vec<Duration>,
}

fn measured<T, E, Fut, P>(
    paused: &Runtime,
    real: &Runtime,
    make: fn() -> Fut,
    parked: fn() -> P,
) -> ([u64; 3], u64)
where
    Fut: Future<Output = Result<T, E>>,
    P: Future + Send + 'static,
    P::Output: Send + 'static,
{
    let allocations = [
        allocations(paused, make, 1, false),
        allocations(paused, make, 1, true),
        allocations(paused, make, 3, true),
    ];
    (allocations, parked_heap(real, parked))
}

macro_rules! contender {
    ($paused:expr, $real:expr, $name:literal, $peer:expr, $make:ident, $parked:ident) => {{
        let (allocations, parked) = measured($paused, $real, $make, $parked);
        Contender {
            name: $name,
            peer: $peer,
            read_retry: |runtime| time_calls(runtime, $make, CALLS, 1),
            read_first: |runtime| time_calls(runtime, $make, CALLS, 0),
            bytes: std::mem::size_of_val(&$make()),
            allocations,
            parked,
            retry_runs: Vec::new(),
            first_runs: Vec::new(),
        }
    }};
}

fn median(runs: &[Duration]) -> f64 {
    let mut runs = runs.to_vec();
    runs.sort();
    runs[runs.len() / 2].as_nanos() as f64 / CALLS as f64
}

fn main() {
    share_with_a_fleet();
    heard_a_roomy_key();
    let paused = paused_runtime();
    let real = real_runtime();
    let mut contenders = [
        contender!(
            &paused,
            &real,
            "hand loop + `sleep(ZERO)`",
            false,
            hand_loop,
            hand_loop_parked
        ),
        contender!(
            &paused,
            &real,
            "`#[retry]`",
            false,
            annotated,
            annotated_parked
        ),
        contender!(
            &paused,
            &real,
            "`Retry::run`",
            false,
            explicit,
            explicit_parked
        ),
        contender!(
            &paused,
            &real,
            "tokio-retry 0.3",
            true,
            tokio_retry,
            tokio_retry_parked
        ),
        contender!(&paused, &real, "backon 1.6", true, backon, backon_parked),
        contender!(&paused, &real, "backoff 0.4", true, backoff, backoff_parked),
        contender!(
            &paused,
            &real,
            "`#[retry]` on an upstream",
            false,
            annotated_upstream,
            annotated_upstream_parked
        ),
        contender!(
            &paused,
            &real,
            "`Retry::run` on an upstream",
            false,
            explicit_upstream,
            explicit_upstream_parked
        ),
        contender!(
            &paused,
            &real,
            "`#[retry]`, the upstream rows' error, no upstream",
            false,
            annotated_same_error,
            annotated_same_error_parked
        ),
        contender!(
            &paused,
            &real,
            "`#[retry]` across two upstreams",
            false,
            annotated_across,
            annotated_across_parked
        ),
        contender!(
            &paused,
            &real,
            "`Retry::run` across two upstreams",
            false,
            explicit_across,
            explicit_across_parked
        ),
        contender!(
            &paused,
            &real,
            "`#[retry]` on an upstream shared with a fleet store",
            false,
            annotated_fleet,
            annotated_fleet_parked
        ),
        contender!(
            &paused,
            &real,
            "`Retry::run`, the upstream rows' error, no upstream",
            false,
            explicit_same_error,
            explicit_same_error_parked
        ),
        contender!(
            &paused,
            &real,
            "`#[retry]` on an upstream that paces, capacity to spare",
            false,
            annotated_paced,
            annotated_upstream_parked
        ),
        contender!(
            &paused,
            &real,
            "tokio-retry 0.3, the engine's per-retry work by hand",
            false,
            tokio_retry_same_work,
            tokio_retry_same_work_parked
        ),
    ];
    // One read of one contender, for an instruction count:
    // `RETRY_PATH_ONCE=2 valgrind --tool=callgrind target/release/deps/retry_path-*`; with
    // `RETRY_PATH_FIRST=1`, of its first tries. Row 11's upstream is shared with a fleet store
    // on the Redis at `RETRY_BENCH_REDIS`.
    if let Some(which) = std::env::var("RETRY_PATH_ONCE")
        .ok()
        .and_then(|at| at.parse::<usize>().ok())
    {
        let read = if std::env::var_os("RETRY_PATH_FIRST").is_some() {
            contenders[which].read_first
        } else {
            contenders[which].read_retry
        };
        println!(
            "{:?}, a future of {} B",
            read(&paused),
            contenders[which].bytes
        );
        return;
    }
    let mut plain_runs = Vec::new();
    for _ in 0..RUNS {
        plain_runs.push(
            (0..READS_PER_RUN)
                .map(|_| time_calls(&paused, plain, CALLS, 0))
                .min()
                .expect("a read"),
        );
        for contender in &mut contenders {
            let fastest = |read: fn(&Runtime) -> Duration| {
                (0..READS_PER_RUN)
                    .map(|_| read(&paused))
                    .min()
                    .expect("a read")
            };
            contender.retry_runs.push(fastest(contender.read_retry));
            contender.first_runs.push(fastest(contender.read_first));
        }
    }
    print_table(&contenders, median(&plain_runs));
}

fn print_table(contenders: &[Contender], plain: f64) {
    let peers = || contenders.iter().filter(|c| c.peer);
    let fastest_retry = peers()
        .map(|c| median(&c.retry_runs))
        .min_by(f64::total_cmp)
        .expect("peers");
    let fastest_first = peers()
        .map(|c| median(&c.first_runs))
        .min_by(f64::total_cmp)
        .expect("peers");
    let smallest = peers().map(|c| c.bytes).min().expect("peers");
    let lightest = peers().map(|c| c.parked).min().expect("peers");
    println!();
    println!(
        "Zero-length waits, paused clock: {CALLS} calls a read, median of {RUNS} runs (fastest of {READS_PER_RUN} reads each); a plain call {plain:.1} ns"
    );
    println!();
    println!(
        "| contender | first try | x plain | one retry | x the fastest peer | future bytes | allocations, one retry | in a turn, 1 retry | in a turn, 3 retries | parked heap | one retry, ns of each run |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for c in contenders {
        let each: Vec<String> = c
            .retry_runs
            .iter()
            .map(|run| format!("{:.0}", run.as_nanos() as f64 / CALLS as f64))
            .collect();
        let (first, retry) = (median(&c.first_runs), median(&c.retry_runs));
        println!(
            "| {} | {first:.1} ns | {:.2} | {retry:.1} ns | {:.2} | {} | {} | {} | {} | {} B | {} |",
            c.name,
            first / plain,
            retry / fastest_retry,
            c.bytes,
            c.allocations[0],
            c.allocations[1],
            c.allocations[2],
            c.parked,
            each.join(", "),
        );
    }
    println!();
    let parked_bound = parked_bound(lightest);
    println!(
        "Bounds: `#[retry]`'s future at most {} B (the smallest peer's {smallest} + the failure {} + the listener {LISTENER_BYTES}); `Retry::run`'s at most {} B (and the `Retry` it owns); parked heap at most {parked_bound} B (the lightest peer's {lightest} + {PARKED_EXTRA_BYTES}, in tokio's {TASK_CELL_STEP}-byte cell steps)",
        future_bound(smallest),
        std::mem::size_of::<std::io::Error>(),
        explicit_future_bound(smallest),
    );
    println!(
        "With one `u64` argument, `#[retry]`'s future is {} B: rustc keeps an `async fn`'s argument twice",
        std::mem::size_of_val(&annotated_with_argument(1))
    );
    for c in contenders
        .iter()
        .filter(|c| (1..3).contains(&position(contenders, c)))
    {
        let bound = if position(contenders, c) == 1 {
            future_bound(smallest)
        } else {
            explicit_future_bound(smallest)
        };
        let met = |ok: bool| if ok { "met" } else { "NOT met" };
        println!(
            "{}: one retry within 5 % of the fastest peer: {}; first try faster than every peer: {}; future: {}; parked: {}; 0 allocations per retry: {}; at most 1 in a turn: {}",
            c.name,
            met(median(&c.retry_runs) <= fastest_retry * 1.05),
            met(median(&c.first_runs) < fastest_first),
            met(c.bytes <= bound),
            met(c.parked <= parked_bound),
            met(c.allocations[0] == 0),
            met(c.allocations[1] <= 1 && c.allocations[2] <= 1),
        );
    }
}

fn position(contenders: &[Contender], contender: &Contender) -> usize {
    contenders
        .iter()
        .position(|c| std::ptr::eq(c, contender))
        .expect("one of them")
}
