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
        upstream: false,
        keyed: false,
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

/// The storm with the calls on one `Upstream`: `keyed`, a rate limit that refuses with a hint;
/// else the outage.
fn on_upstream(clients: u32, keyed: bool, upstream: bool) -> Outcome {
    simulate(&Storm {
        clients,
        outage: if keyed {
            Duration::ZERO
        } else {
            Duration::from_secs(30)
        },
        capacity: clients / 10,
        resubmit: Duration::from_secs(5),
        policy: Policy::AVAILABILITY,
        quota: false,
        upstream,
        keyed,
    })
}

#[test]
fn on_an_upstream_no_attempt_is_sent_inside_an_announced_pause() {
    let alone = on_upstream(1_000, true, false);
    let shared = on_upstream(1_000, true, true);
    assert!(alone.inside_pause > 0, "{alone:?}");
    assert_eq!(shared.inside_pause, 0, "{shared:?}");
}

#[test]
fn on_an_upstream_an_outage_is_probed_by_one_call_at_a_time() {
    let alone = on_upstream(1_000, false, false);
    let shared = on_upstream(1_000, false, true);
    // Without it, each call makes its four attempts; with it, the gate's threshold and one
    // probe a rung, whatever the number of calls.
    assert!(alone.attempts_in_outage > 3_000, "{alone:?}");
    assert!(shared.attempts_in_outage < 100, "{shared:?}");
}

/// A primary outage, 1,000 callers: across the two, the primary sees the gate's threshold and
/// one probe a rung during its outage, no call waits, and none fails.
#[test]
fn across_upstreams_an_outage_of_the_primary_costs_no_call_a_wait() {
    use retry_bench::storm::{Fallback, simulate_fallback};
    let storm = |across| Fallback {
        clients: 1_000,
        arrivals: Duration::from_secs(10),
        outage: Duration::from_secs(5),
        latency: Duration::from_millis(20),
        across,
    };
    let by_hand = simulate_fallback(&storm(false));
    let across = simulate_fallback(&storm(true));
    assert_eq!((by_hand.failed, across.failed), (0, 0));
    // Rungs at 0.25, 0.75, 1.75 and 3.75 s after the gate opened: within the 5 s outage.
    assert!(across.primary_in_outage <= 3 + 4, "{across:?}");
    assert!(by_hand.primary_in_outage > 1_000, "{by_hand:?}");
    assert_eq!(across.mean_added, Duration::ZERO, "{across:?}");
    assert!(
        by_hand.mean_added > Duration::from_millis(100),
        "{by_hand:?}"
    );
}

/// 1,000 clients over 16 processes: with their upstreams shared through the fleet store (its
/// in-memory fake), an outage sees the gate's threshold and one probe a rung, as one process
/// does; each process alone, sixteen times that. A keyed limit sees fewer attempts inside its
/// pauses.
#[test]
fn across_processes_the_fleet_store_keeps_an_outage_to_one_processs_probes() {
    use retry_bench::storm::simulate_fleet;
    let storm = |keyed| Storm::on_one_key(1_000, 100, keyed);
    let one = simulate_fleet(&storm(false), 1, false);
    let alone = simulate_fleet(&storm(false), 16, false);
    let shared = simulate_fleet(&storm(false), 16, true);
    assert_eq!(
        shared.attempts_in_outage, one.attempts_in_outage,
        "{shared:?}"
    );
    assert_eq!(
        alone.attempts_in_outage,
        16 * one.attempts_in_outage,
        "{alone:?}"
    );
    let alone = simulate_fleet(&storm(true), 16, false);
    let shared = simulate_fleet(&storm(true), 16, true);
    assert!(
        shared.inside_pause * 2 < alone.inside_pause,
        "{shared:?} {alone:?}"
    );
}
