//! [`FleetMemory`]: the fleet store's rules on an in-memory fake, for simulations in virtual
//! time: the `Fleet`s made on one stand for the processes of a fleet sharing one Redis. The
//! same reports, the same messages; the store's state behind one lock, on tokio's clock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::{FleetReport, FleetShared, LEASE_SLACK, lock};

/// An in-memory fleet store: make a [`Fleet`](super::Fleet) on it for each simulated process
/// with [`Fleet::in_memory`](super::Fleet::in_memory). Messages reach the other processes at
/// once, and none is lost.
///
/// ```
/// use retry_runtime::fleet::{Fleet, FleetConfig, FleetMemory};
/// use std::sync::Arc;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = Arc::new(FleetMemory::default());
/// let one = Fleet::in_memory(&store, FleetConfig::new("simulated")).unwrap();
/// let two = Fleet::in_memory(&store, FleetConfig::new("simulated")).unwrap();
/// assert!(!one.is_degraded() && !two.is_degraded());
/// # }
/// ```
#[derive(Debug, Default)]
pub struct FleetMemory {
    upstreams: Mutex<HashMap<String, MemoryKept>>,
    fleets: Mutex<Vec<Weak<FleetShared>>>,
    /// Each upstream's retry budget: thousandths of a token, and when it was last kept.
    budgets: Mutex<HashMap<String, (u64, u64)>>,
    /// The store's clock starts here.
    epoch: std::sync::OnceLock<Instant>,
}

/// What the store keeps of one upstream.
#[derive(Debug, Default)]
struct MemoryKept {
    pause: Option<(Instant, &'static str)>,
    outages: Vec<(Instant, u64)>,
    /// The prober and its lease.
    gate: Option<(u64, Instant)>,
}

impl FleetMemory {
    /// The budget script's step on `upstream`'s bucket: `requests` handed in, `want` asked.
    pub(super) fn budget(
        &self,
        upstream: &str,
        budget: super::FleetBudget,
        requests: u32,
        want: u32,
    ) -> u32 {
        let epoch = *self.epoch.get_or_init(Instant::now);
        let now = u64::try_from(Instant::now().duration_since(epoch).as_millis()).unwrap_or(0);
        let mut budgets = lock(&self.budgets);
        let kept = budgets.entry(upstream.to_owned()).or_insert((0, now));
        super::budget::step(budget, kept, now, requests, want)
    }

    pub(super) fn join(&self, shared: &Arc<FleetShared>) {
        lock(&self.fleets).push(Arc::downgrade(shared));
    }

    /// The fleets on this store, as the members Redis would count.
    pub(super) fn members(&self) -> u32 {
        let fleets = lock(&self.fleets);
        let live = fleets
            .iter()
            .filter(|fleet| fleet.strong_count() > 0)
            .count();
        u32::try_from(live).unwrap_or(u32::MAX)
    }

    /// Tell every fleet but `from` the message.
    fn publish(&self, from: u64, message: &str) {
        let fleets: Vec<_> = lock(&self.fleets)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for fleet in fleets.iter().filter(|fleet| fleet.origin != from) {
            fleet.told(message);
        }
    }

    /// Apply `report` from `shared`'s process, as the scripts do.
    pub(super) fn apply(&self, shared: &FleetShared, report: &FleetReport) {
        let now = Instant::now();
        let origin = shared.origin;
        match *report {
            FleetReport::Pause {
                upstream,
                pause_ms,
                cap_ms,
                kind,
            } => {
                let ms = pause_ms.min(cap_ms);
                let wanted = now + Duration::from_millis(ms);
                {
                    let mut kept = lock(&self.upstreams);
                    let kept = kept.entry(upstream.to_owned()).or_default();
                    if kept.pause.is_some_and(|(end, _)| end >= wanted) {
                        return;
                    }
                    kept.pause = Some((wanted, kind));
                }
                self.publish(origin, &format!("pause {origin} {upstream} {ms} {kind}"));
            }
            FleetReport::Outage {
                upstream,
                authored,
                first_ms,
            } => self.outage(shared, upstream, authored, first_ms),
            FleetReport::ProbeFailed { upstream, next_ms } => {
                let mut kept = lock(&self.upstreams);
                let kept = kept.entry(upstream.to_owned()).or_default();
                if let Some((prober, lease)) = &mut kept.gate
                    && *prober == origin
                {
                    *lease = now + Duration::from_millis(next_ms) + LEASE_SLACK;
                }
            }
            FleetReport::Closed { upstream } => {
                let was_open = {
                    let mut kept = lock(&self.upstreams);
                    let kept = kept.entry(upstream.to_owned()).or_default();
                    kept.outages.clear();
                    kept.gate.take().is_some()
                };
                if was_open {
                    self.publish(origin, &format!("close {origin} {upstream}"));
                }
            }
            FleetReport::Paced => shared.members(self.members()),
        }
    }

    /// An outage failure: the gate opens on the quorum, as the script's rule says.
    fn outage(&self, shared: &FleetShared, upstream: &'static str, authored: bool, first_ms: u64) {
        let Some(local) = shared.upstream(upstream) else {
            return;
        };
        let (failures, window) = local.gate_rule();
        let now = Instant::now();
        let origin = shared.origin;
        let first = Duration::from_millis(first_ms);
        {
            let mut kept = lock(&self.upstreams);
            let kept = kept.entry(upstream.to_owned()).or_default();
            kept.outages
                .retain(|(at, _)| now.saturating_duration_since(*at) < window);
            kept.outages.push((now, origin));
            if kept.gate.is_some() || kept.outages.len() < failures as usize {
                return;
            }
            let mut origins: Vec<u64> = kept.outages.iter().map(|(_, origin)| *origin).collect();
            origins.sort_unstable();
            origins.dedup();
            if origins.len() < 2 && !authored {
                return;
            }
            kept.gate = Some((origin, now + first + LEASE_SLACK));
        }
        local.fleet_side().gated(true, first);
        self.publish(
            origin,
            &format!("open {origin} {upstream} {origin} {first_ms}"),
        );
    }
}
