//! [`FleetBudget`]: a retry budget per upstream across the fleet, as a ratio of its requests
//! (Finagle's `RetryBudget`, Envoy's retry budget, gRPC's retry throttling), kept in Redis.
//!
//! Ratio budgets compose across a fleet where absolute ones multiply by its size: a quota of
//! 500 tokens per process lets 200 processes in an outage each retry as if alone, while a
//! ratio of the fleet's requests stays a ratio however many processes share it. Nothing waits
//! on Redis on an attempt's path: each process counts its requests and holds a few tokens
//! leased from the fleet's bucket; a task tops the lease up and hands the counted requests in,
//! batched, a few times a second.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;

use super::{FleetShared, lock, scripts};
use crate::upstream::Upstream;

/// How often each process hands its requests in and tops up its leases.
pub(super) const TICK: Duration = Duration::from_millis(50);

/// A bucket no process has kept for this long starts again empty (in Redis, its key expires).
pub(super) const KEPT_MS: u64 = 60_000;

/// Lease rounds failed in a row after which the budget stops holding retries, until a round
/// succeeds: a budget that cannot be topped up must not end calls on `Quota`.
const FAILED_ROUNDS: u32 = 3;

/// A retry budget per upstream across the fleet: retries at most `percent` of the fleet's
/// requests (first tries) on the upstream, plus a floor of `floor` retries a second so that a
/// quiet upstream can still retry. The bucket holds at most `burst` tokens, so a long quiet
/// spell does not bank a storm; each process leases `lease` tokens at a time.
///
/// Given to the fleet with [`FleetConfig::retry_budget`](super::FleetConfig::retry_budget).
/// While the fleet store is degraded, or not yet reached, no budget holds a retry: the calls'
/// own quotas do, as without a fleet.
///
/// ```
/// use retry_runtime::fleet::{FleetBudget, FleetConfig};
///
/// // A fifth of the requests may be retries, and two a second whatever the traffic.
/// let budget = FleetBudget::percent(20).floor(2);
/// let config = FleetConfig::new("agents").retry_budget(budget);
/// assert_eq!(config.budget(), Some(budget));
/// assert_eq!(budget.bound(1_000, 10), 200 + 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetBudget {
    percent: u32,
    floor: u32,
    burst: u32,
    lease: u32,
}

impl FleetBudget {
    /// Retries at most `percent` % of requests (at most 100), a floor of 1 retry a second, a
    /// bucket of at most 20 tokens, leases of 4.
    pub const fn percent(percent: u32) -> FleetBudget {
        FleetBudget {
            percent: if percent > 100 { 100 } else { percent },
            floor: 1,
            burst: 20,
            lease: 4,
        }
    }

    /// At least `per_second` retries a second across the fleet, whatever the requests.
    #[must_use]
    pub const fn floor(mut self, per_second: u32) -> FleetBudget {
        self.floor = per_second;
        self
    }

    /// The most tokens the fleet's bucket holds (at least 1).
    #[must_use]
    pub const fn burst(mut self, tokens: u32) -> FleetBudget {
        self.burst = if tokens == 0 { 1 } else { tokens };
        self
    }

    /// The tokens a process leases at a time (at least 1): more, and a retry waits on Redis
    /// more rarely; fewer, and fewer tokens sit idle in a process.
    #[must_use]
    pub const fn lease(mut self, tokens: u32) -> FleetBudget {
        self.lease = if tokens == 0 { 1 } else { tokens };
        self
    }

    /// The most retries the fleet may make over `seconds` in which it made `requests`: the
    /// ratio of the requests, plus the floor.
    pub const fn bound(&self, requests: u64, seconds: u64) -> u64 {
        (requests.saturating_mul(self.percent as u64) / 100)
            .saturating_add(seconds.saturating_mul(self.floor as u64))
    }
}

impl Default for FleetBudget {
    /// Retries at most 20 % of requests, as Finagle's and Envoy's budgets default to.
    fn default() -> FleetBudget {
        FleetBudget::percent(20)
    }
}

/// The bucket's rule, as the script keeps it: `milli` thousandths of a token at `at` (ms),
/// now `now`, `requests` handed in, `want` tokens asked for. Returns the tokens leased.
pub(super) fn step(
    budget: FleetBudget,
    kept: &mut (u64, u64),
    now: u64,
    requests: u32,
    want: u32,
) -> u32 {
    // Kept too long ago: gone, as the key's expiry takes it in Redis.
    let (milli, at) = match now.saturating_sub(kept.1) > KEPT_MS {
        true => (0, now),
        false => *kept,
    };
    let cap = u64::from(budget.burst) * 1000;
    // A floor of F a second is F thousandths a millisecond.
    let floor = now
        .saturating_sub(at)
        .saturating_mul(u64::from(budget.floor));
    let deposit = u64::from(requests) * u64::from(budget.percent) * 10;
    let milli = milli.saturating_add(floor).saturating_add(deposit).min(cap);
    let grant = (milli / 1000).min(u64::from(want));
    *kept = (milli - grant * 1000, now);
    u32::try_from(grant).unwrap_or(0)
}

/// What a process asks of the bucket for `upstream` now: its requests since it last asked,
/// and the tokens that top its lease up; `None` if it has nothing to hand in or ask for.
fn asked(budget: FleetBudget, upstream: &Upstream) -> Option<(u32, u32)> {
    let (requests, held, wanting) = upstream.fleet_side().drain();
    let low = held < budget.lease.div_ceil(2) || wanting;
    let want = if low {
        budget.lease.saturating_sub(held)
    } else {
        0
    };
    (requests > 0 || want > 0).then_some((requests, want))
}

/// The upstreams a budget's task keeps: when the task ends (its fleet store gone, or its
/// runtime shut down), no budget holds their retries, for nothing tops their leases up.
struct BudgetKept(Vec<&'static Upstream>);

impl Drop for BudgetKept {
    fn drop(&mut self) {
        for upstream in &self.0 {
            upstream.fleet_side().budgeted(false);
        }
    }
}

/// The budget's task: every [`TICK`], each shared upstream's requests handed in and its lease
/// topped up; the budget holds retries only while this succeeds. Ends with the fleet store.
pub(super) async fn keep(shared: std::sync::Weak<FleetShared>, budget: FleetBudget) {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut connection: Option<ConnectionManager> = None;
    let mut kept = BudgetKept(Vec::new());
    let mut failed = 0;
    // backoff-lint: allow(a fixed tick is the budget's batching of its counts, not a retry's wait)
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        kept.0.clone_from(&lock(&shared.upstreams));
        let upstreams = &kept.0;
        if let Some(memory) = &shared.memory {
            for upstream in upstreams.iter().copied() {
                if let Some((requests, want)) = asked(budget, upstream) {
                    let grant = memory.budget(upstream.name(), budget, requests, want);
                    upstream.fleet_side().granted(grant);
                }
                upstream.fleet_side().budgeted(true);
            }
            continue;
        }
        if !shared.breaker.allows() {
            continue;
        }
        let Some(redis) = shared.reach(&mut connection).await else {
            continue;
        };
        if lease(&shared, budget, upstreams, redis).await {
            failed = 0;
            continue;
        }
        failed += 1;
        if failed >= FAILED_ROUNDS {
            for upstream in upstreams {
                upstream.fleet_side().budgeted(false);
            }
        }
    }
}

/// Hand in each upstream's requests and top its lease up, one script each; the first failure
/// ends the round (the breaker counts it). Whether the round succeeded.
async fn lease(
    shared: &Arc<FleetShared>,
    budget: FleetBudget,
    upstreams: &[&'static Upstream],
    redis: &mut ConnectionManager,
) -> bool {
    for upstream in upstreams.iter().copied() {
        let Some((requests, want)) = asked(budget, upstream) else {
            upstream.fleet_side().budgeted(true);
            continue;
        };
        let mut invocation = scripts::BUDGET.prepare_invoke();
        invocation
            .key(shared.budget_key(upstream.name()))
            .arg(requests)
            .arg(budget.percent)
            .arg(budget.floor)
            .arg(budget.burst)
            .arg(want);
        let ran =
            tokio::time::timeout(shared.config.timeout, invocation.invoke_async::<u32>(redis))
                .await;
        match ran {
            Ok(Ok(grant)) => {
                upstream.fleet_side().granted(grant);
                upstream.fleet_side().budgeted(true);
                shared.breaker.succeeded();
            }
            Ok(Err(_)) => {
                shared.failed("a lease failed");
                return false;
            }
            Err(_) => {
                shared.failed("a lease timed out");
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_deposits_its_ratio_and_a_lease_takes_whole_tokens() {
        let budget = FleetBudget::percent(20).floor(0);
        let mut kept = (0, 0);
        // Ten requests are two tokens: a lease of four gets two.
        assert_eq!(step(budget, &mut kept, 0, 10, 4), 2);
        assert_eq!(kept, (0, 0));
        // Four more requests are 0.8 of a token: none yet, kept for the next.
        assert_eq!(step(budget, &mut kept, 0, 4, 4), 0);
        assert_eq!(step(budget, &mut kept, 0, 1, 4), 1);
    }

    #[test]
    fn the_floor_accrues_by_the_stores_clock_and_the_bucket_keeps_no_more_than_its_burst() {
        let budget = FleetBudget::percent(20).floor(2).burst(5);
        let mut kept = (0, 0);
        // Half a second at two a second: one token.
        assert_eq!(step(budget, &mut kept, 500, 0, 4), 1);
        // Ten seconds of quiet at two a second bank no more than the burst, five.
        assert_eq!(step(budget, &mut kept, 10_500, 0, 100), 5);
        // A clock that went back accrues nothing.
        assert_eq!(step(budget, &mut kept, 1_000, 0, 4), 0);
    }

    #[test]
    fn a_bucket_kept_by_no_one_for_a_minute_starts_again_empty() {
        let budget = FleetBudget::percent(100).floor(0);
        let mut kept = (0, 0);
        assert_eq!(step(budget, &mut kept, 0, 5, 0), 0);
        // A minute and more later, as Redis's expiry of the key has it: the five are gone.
        assert_eq!(step(budget, &mut kept, KEPT_MS + 1, 0, 5), 0);
        assert_eq!(kept, (0, KEPT_MS + 1));
    }

    #[test]
    fn the_bound_is_the_ratio_of_requests_plus_the_floor() {
        assert_eq!(FleetBudget::default().bound(480, 4), 96 + 4);
        assert_eq!(FleetBudget::percent(250), FleetBudget::percent(100));
        assert_eq!(
            FleetBudget::percent(100).bound(u64::MAX, u64::MAX),
            u64::MAX
        );
    }
}
