//! Waits registered in one turn (issue 42): `cargo bench -p retry-bench --bench turn_waits`.
//!
//! Batches of calls, 1,000 or 100,000 at once, spawned on a current-thread tokio runtime whose
//! clock is paused, each call carried into the turn with `TurnHandle::scope`: every call's
//! first attempt fails, so the whole batch is brought into a wait at once (each call takes its
//! place among those who hear the turn's cancel, and among the turn's calls in flight, while
//! all the others hold theirs); the clock then skips the millisecond, each call's second
//! attempt succeeds, and the next batch comes. The same batches outside any turn beside them.
//!
//! A read makes 200,000 calls in batches of one size, one after another, inside one turn (its
//! places, once taken, are given back and taken again; a turn made for each batch would
//! measure the allocator giving the memory of 100,000 places back to the system and faulting
//! it in again). Five runs, each reading every batch size in turn (the fastest of three reads
//! kept per run), so that a machine that slows down for a while slows every size of a run
//! alike; the table gives the median run's time per call and how it grows from 1,000 calls
//! to 100,000 (each run's ratio beside it): issue 42 bounds that growth at 1.5 in a turn.
//! (Criterion, tried first, timed each size apart, and on a shared machine the ratio it gave
//! moved between 1.5 and 2.3 from one run to the next.)

use std::hint::black_box;
use std::time::{Duration, Instant};

use retry_runtime::{Class, Policy, Retry, Turn, turn};
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

/// The batch sizes.
const BATCHES: [usize; 2] = [1_000, 100_000];
/// The calls a read makes, in batches of one size.
const CALLS_PER_READ: usize = 200_000;
const RUNS: usize = 5;
const READS_PER_RUN: usize = 3;
/// How much the time per call may grow from the small batch to the large one, in a turn.
const BOUND: f64 = 1.5;

/// One wait of a millisecond: each call fails once, waits, and succeeds.
const ONE_WAIT: Policy = Policy::AVAILABILITY
    .with_base(Duration::from_millis(1))
    .with_cap(Duration::from_millis(1));

/// A call that fails its first attempt and succeeds its second.
async fn call() -> u32 {
    Retry::new(&ONE_WAIT)
        .run_fn(|attempt| {
            std::future::ready(if attempt < 2 {
                Err(Class::Transport)
            } else {
                Ok(attempt)
            })
        })
        .await
        .unwrap_or(0)
}

/// `calls` calls spawned at once, each carried into the turn the caller runs in, if any; all
/// awaited.
async fn batch(calls: usize) {
    let handle = turn::current();
    let mut set = JoinSet::new();
    for _ in 0..calls {
        match &handle {
            Some(handle) => set.spawn(handle.clone().scope(call())),
            None => set.spawn(call()),
        };
    }
    while let Some(done) = set.join_next().await {
        assert_eq!(black_box(done.expect("the call ran")), 2);
    }
}

/// `batches` batches of `calls`, one after another, in one turn of an hour or outside any.
fn run_batches(runtime: &Runtime, batches: usize, calls: usize, in_turn: bool) {
    let work = async move {
        for _ in 0..batches {
            batch(calls).await;
        }
    };
    if in_turn {
        let turn = Turn::new(Duration::from_secs(3600));
        let (outcome, report) = runtime.block_on(turn.run(work));
        assert!(outcome.is_finished());
        assert_eq!(report.calls() as usize, batches * calls);
        assert_eq!(report.retries() as usize, batches * calls);
    } else {
        runtime.block_on(work);
    }
}

/// The time per call of one read: `CALLS_PER_READ` calls, in batches of `calls`.
fn read(runtime: &Runtime, calls: usize, in_turn: bool) -> f64 {
    let start = Instant::now();
    run_batches(runtime, CALLS_PER_READ / calls, calls, in_turn);
    start.elapsed().as_nanos() as f64 / CALLS_PER_READ as f64
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a paused current-thread runtime");
    let places = [(true, "in one turn"), (false, "outside any turn")];
    // Warm the runtime, the allocator and the caches of both sizes once.
    for (in_turn, _) in places {
        for calls in BATCHES {
            run_batches(&runtime, 1, calls, in_turn);
        }
    }
    // runs[place][size]: each run's time per call.
    let mut runs: [[Vec<f64>; 2]; 2] = Default::default();
    for _ in 0..RUNS {
        for (place, (in_turn, _)) in places.into_iter().enumerate() {
            for (size, calls) in BATCHES.into_iter().enumerate() {
                let fastest = (0..READS_PER_RUN)
                    .map(|_| read(&runtime, calls, in_turn))
                    .min_by(f64::total_cmp)
                    .expect("a read");
                runs[place][size].push(fastest);
            }
        }
    }
    let [small, large] = BATCHES;
    println!(
        "Calls brought into a wait at once, paused clock: ns a call, median of {RUNS} runs (fastest of {READS_PER_RUN} reads of {CALLS_PER_READ} calls each)"
    );
    println!();
    println!("| calls | {small} | {large} | x from {small} to {large} | x, each run |");
    println!("|---|---:|---:|---:|---|");
    let mut growth = Vec::new();
    for (place, (_, name)) in places.into_iter().enumerate() {
        let [a, b] = [0, 1].map(|size| median(runs[place][size].clone()));
        let each: Vec<String> = (0..RUNS)
            .map(|run| format!("{:.2}", runs[place][1][run] / runs[place][0][run]))
            .collect();
        growth.push(b / a);
        println!(
            "| {name} | {a:.0} | {b:.0} | {:.2} | {} |",
            b / a,
            each.join(", ")
        );
    }
    println!();
    println!(
        "In one turn, the time a call within {BOUND}x from {small} to {large} calls: {}",
        if growth[0] <= BOUND { "met" } else { "NOT met" }
    );
}
