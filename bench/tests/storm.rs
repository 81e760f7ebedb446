//! The storm simulation's own figures: a shared quota keeps a dead server's load near one
//! attempt per call; without it, each call makes the policy's attempts.

use std::time::Duration;

use retry_bench::storm::{Outcome, Storm, simulate};
use retry_runtime::{Jitter, Policy};

fn storm(jitter: Jitter, quota: bool) -> Outcome {
    simulate(&Storm {
        clients: 1_000,
        outage: Duration::from_secs(30),
        capacity: 100,
        resubmit: Duration::from_secs(5),
        policy: Policy::AVAILABILITY.with_jitter(jitter),
        quota,
    })
}

#[test]
fn with_the_quota_an_outage_costs_at_most_1_1_attempts_per_call() {
    for jitter in [Jitter::None, Jitter::Proportional, Jitter::Full] {
        let outcome = storm(jitter, true);
        let amplification = outcome.attempts_per_call_in_outage();
        assert!(
            amplification <= 1.1,
            "{jitter:?}: {amplification} ({outcome:?})"
        );
    }
}

#[test]
fn without_the_quota_each_call_makes_about_the_policys_attempts() {
    for jitter in [Jitter::None, Jitter::Proportional, Jitter::Full] {
        let outcome = storm(jitter, false);
        let amplification = outcome.attempts_per_call_in_outage();
        let attempts = f64::from(Policy::AVAILABILITY.attempts());
        assert!(
            amplification > attempts - 0.25 && amplification <= attempts,
            "{jitter:?}: {amplification} ({outcome:?})"
        );
    }
}

#[test]
fn every_job_gets_done_once_the_server_recovers() {
    let outcome = storm(Jitter::Full, true);
    // A tenth of the clients per second: at least ten seconds to serve them all.
    assert!(
        outcome.clear_after_recovery >= Duration::from_secs(9),
        "{outcome:?}"
    );
    assert!(
        outcome.clear_after_recovery < Duration::from_secs(120),
        "{outcome:?}"
    );
}
