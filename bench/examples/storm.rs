//! Print the retry-storm table: `cargo run --release -p retry-bench --example storm`.
//!
//! Clients call a server that is down for 30 s, then serves a tenth of the clients per second;
//! each job is resubmitted 5 s after its ladder gives up. `availability`'s ladder with each
//! jitter, with and without a shared AWS-standard quota.

use std::time::{Duration, Instant};

use retry_bench::storm::{Storm, simulate};
use retry_runtime::{Jitter, Policy};

fn main() {
    println!(
        "| clients | jitter | quota | attempts per call in the outage | peak attempts/s | backlog cleared after recovery |"
    );
    println!("|---:|---|---|---:|---:|---:|");
    let started = Instant::now();
    for clients in [1_000, 10_000, 100_000] {
        for jitter in [Jitter::None, Jitter::Proportional, Jitter::Full] {
            for quota in [false, true] {
                let outcome = simulate(&Storm {
                    clients,
                    outage: Duration::from_secs(30),
                    capacity: clients / 10,
                    resubmit: Duration::from_secs(5),
                    policy: Policy::AVAILABILITY.with_jitter(jitter),
                    quota,
                });
                println!(
                    "| {clients} | {} | {} | {:.2} | {} | {:.1} s |",
                    jitter.name(),
                    if quota { "yes" } else { "no" },
                    outcome.attempts_per_call_in_outage(),
                    outcome.peak_per_second,
                    outcome.clear_after_recovery.as_secs_f64(),
                );
            }
        }
    }
    eprintln!("simulated in {:.1} s", started.elapsed().as_secs_f64());
}
