//! Print the retry-storm table: `cargo run --release -p retry-bench --example storm`.
//!
//! Clients call a server that is down for 30 s, then serves a tenth of the clients per second;
//! each job is resubmitted 5 s after its ladder gives up. `availability`'s ladder with each
//! jitter, with and without a shared AWS-standard quota; then many calls on one upstream; then
//! a primary outage with a secondary to fall back to, by hand and across the two; then 1,000
//! clients over 1, 4, 16 and 64 processes, each process's upstream its own or shared through
//! the fleet store (its in-memory fake). With `--pacing-svg PATH`, it draws the picture of the
//! guide's pacing chapter instead: `cargo run --release -p retry-bench --example storm --
//! --pacing-svg retry-runtime/src/guide/pacing.svg`.

use std::time::{Duration, Instant};

use retry_bench::storm::{Fallback, Storm, simulate, simulate_fallback, simulate_fleet};
use retry_runtime::{Jitter, Policy};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|arg| arg == "--pacing-svg") {
        let path = args.get(at + 1).map_or("bench/pacing.svg", String::as_str);
        pacing_svg(path).expect("the picture is drawn");
        println!("drew {path}");
        return;
    }
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
                    upstream: false,
                    keyed: false,
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
    println!();
    println!(
        "| clients | the server | upstream | attempts per call | attempts during the outage | attempts inside an announced pause | peak attempts/s | cleared after |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|---:|");
    for clients in [10, 100, 1_000, 10_000] {
        for keyed in [false, true] {
            for upstream in [false, true] {
                let outcome = simulate(&Storm {
                    clients,
                    outage: if keyed {
                        Duration::ZERO
                    } else {
                        Duration::from_secs(30)
                    },
                    capacity: (clients / 10).max(1),
                    resubmit: Duration::from_secs(5),
                    policy: Policy::AVAILABILITY,
                    quota: false,
                    upstream,
                    keyed,
                });
                println!(
                    "| {clients} | {} | {} | {:.2} | {} | {} | {} | {:.1} s |",
                    if keyed {
                        "a keyed limit, 429 with a hint"
                    } else {
                        "down 30 s, then 503 past its capacity"
                    },
                    if upstream { "yes" } else { "no" },
                    outcome.attempts as f64 / outcome.calls.max(1) as f64,
                    outcome.attempts_in_outage,
                    outcome.inside_pause,
                    outcome.peak_per_second,
                    outcome.clear_after_recovery.as_secs_f64(),
                );
            }
        }
    }
    println!();
    println!(
        "| callers | a primary down 5 s, a healthy secondary (20 ms) | requests to the primary | during its outage | to the secondary | mean added latency | failed |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for across in [false, true] {
        let outcome = simulate_fallback(&Fallback {
            clients: 1_000,
            arrivals: Duration::from_secs(10),
            outage: Duration::from_secs(5),
            latency: Duration::from_millis(20),
            across,
        });
        println!(
            "| 1000 | {} | {} | {} | {} | {:.3} s | {} |",
            if across {
                "across the two (`Retry::across`)"
            } else {
                "by hand: the primary's ladder, then the secondary's"
            },
            outcome.primary,
            outcome.primary_in_outage,
            outcome.secondary,
            outcome.mean_added.as_secs_f64(),
            outcome.failed,
        );
    }
    println!();
    println!(
        "| processes | the server | upstreams | attempts per call | attempts during the outage | attempts inside an announced pause |"
    );
    println!("|---:|---|---|---:|---:|---:|");
    for processes in [1, 4, 16, 64] {
        for keyed in [false, true] {
            for fleet in [false, true] {
                let outcome =
                    simulate_fleet(&Storm::on_one_key(1_000, 100, keyed), processes, fleet);
                println!(
                    "| {processes} | {} | {} | {:.2} | {} | {} |",
                    if keyed {
                        "a keyed limit, 429 with a hint"
                    } else {
                        "down 30 s, then 503 past its capacity"
                    },
                    if fleet {
                        "shared through the fleet store (in memory)"
                    } else {
                        "each process its own"
                    },
                    outcome.attempts as f64 / outcome.calls.max(1) as f64,
                    outcome.attempts_in_outage,
                    outcome.inside_pause,
                );
            }
        }
    }
    eprintln!("simulated in {:.1} s", started.elapsed().as_secs_f64());
}

/// `--pacing-svg PATH`: the picture of [`retry_bench::pacing`], requests and refusals per
/// 100 ms for each way of sharing the key.
fn pacing_svg(path: &str) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    use retry_bench::pacing::{Pacing, simulate_pacing};
    let modes = [Pacing::Alone, Pacing::SharedPause, Pacing::Paced];
    let runs: Vec<_> = modes
        .iter()
        .map(|mode| (*mode, simulate_pacing(*mode)))
        .collect();
    let slots = runs
        .iter()
        .map(|(_, seen)| seen.per_100ms.len())
        .max()
        .unwrap_or(1);
    let top = runs
        .iter()
        .flat_map(|(_, seen)| seen.per_100ms.iter().map(|(requests, _)| *requests))
        .max()
        .unwrap_or(1);
    let root = SVGBackend::new(path, (900, 660)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((3, 1));
    for ((mode, seen), panel) in runs.iter().zip(panels.iter()) {
        let caption = format!(
            "{}: {} requests, {} refused, {} calls failed",
            mode.name(),
            seen.requests(),
            seen.refused(),
            seen.failed
        );
        let mut chart = ChartBuilder::on(panel)
            .caption(caption, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(40)
            .build_cartesian_2d(0f64..slots as f64 / 10.0, 0u32..top + 1)?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc("per 100 ms")
            .draw()?;
        let line = |pick: fn(&(u32, u32)) -> u32| {
            seen.per_100ms
                .iter()
                .enumerate()
                .map(move |(slot, counts)| (slot as f64 / 10.0, pick(counts)))
        };
        chart
            .draw_series(LineSeries::new(line(|(requests, _)| *requests), &BLUE))?
            .label("requests")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE));
        chart
            .draw_series(LineSeries::new(line(|(_, refused)| *refused), &RED))?
            .label("refused (429)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
        chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
