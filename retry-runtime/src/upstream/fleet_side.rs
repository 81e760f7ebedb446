//! [`FleetSide`]: what a fleet store tells an upstream and asks of it, apart from what calls
//! do. The store shares it, mirrors another process's pause or gate in it, and keeps its
//! retry budget; no call's attempt reads any of this but the budget's word.

#![cfg_attr(not(feature = "fleet"), allow(dead_code))]

use std::sync::Arc;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::{FleetSink, Gate, Upstream, later};
use crate::class::Class;
use crate::meter::{self, UpstreamSeries};

/// An upstream, as its fleet store sees it: the only way the store reaches it.
#[derive(Clone, Copy)]
pub(crate) struct FleetSide<'a>(&'a Upstream);

impl Upstream {
    /// The upstream as its fleet store sees it.
    pub(crate) fn fleet_side(&self) -> FleetSide<'_> {
        FleetSide(self)
    }
}

impl FleetSide<'_> {
    /// Tell `sink` what this process learns from now on; `false` if another already is told.
    pub(crate) fn share(self, sink: Arc<dyn FleetSink>) -> bool {
        let mut shared = self.0.shared.lock().unwrap_or_else(PoisonError::into_inner);
        if shared.is_some() {
            return false;
        }
        *shared = Some(sink);
        self.0.is_shared.store(true, Ordering::Release);
        true
    }

    /// The fleet that shared the upstream is gone: what this process learns stays here, its
    /// retries are no longer budgeted, and a gate that waited for another process's probe
    /// probes here now.
    pub(crate) fn unshare(self) {
        let sink = self
            .0
            .shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.0.is_shared.store(false, Ordering::Release);
        drop(sink);
        let mut state = self.0.lock();
        state.budgeted = false;
        if state.gate == Gate::Remote {
            state.gate = Gate::Waiting {
                next: Instant::now(),
                failed: 0,
            };
        }
        self.0.store(&state);
        drop(state);
        self.0.live().changed.notify_waiters();
    }

    /// Another process of the fleet learned a pause of `class` that ends `remaining` from now:
    /// it holds here as one learned here does (the latest end wins), and goes no further.
    pub(crate) fn paused(self, remaining: Duration, class: Class) {
        let until = later(Instant::now(), remaining);
        let mut state = self.0.lock();
        if state.paused_until.is_some_and(|(end, _)| end >= until) {
            return;
        }
        state.paused_until = Some((until, class));
        self.0.store(&state);
        drop(state);
        meter::upstream(self.0.name, UpstreamSeries::Paused);
        tracing::info!(
            target: "retry",
            upstream = self.0.name,
            pause_ms = u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX),
            "{} is paused for every call (told by the fleet)",
            self.0.name
        );
        self.0.live().changed.notify_waiters();
    }

    /// The fleet opened the gate: this process probes (`probes`), its first probe `next` from
    /// now, or waits for another's probe to close it.
    pub(crate) fn gated(self, probes: bool, next: Duration) {
        let mut state = self.0.lock();
        let was = state.gate;
        state.gate = match (probes, was) {
            // Probing already, or waiting for its own probe: it goes on so.
            (true, Gate::Waiting { .. } | Gate::Probing { .. }) => was,
            (true, _) => Gate::Waiting {
                next: later(Instant::now(), next),
                failed: 0,
            },
            (false, _) => Gate::Remote,
        };
        if state.gate == was {
            return;
        }
        self.0.store(&state);
        drop(state);
        if was == Gate::Closed {
            meter::upstream(self.0.name, UpstreamSeries::GateOpened);
            tracing::warn!(
                target: "retry",
                upstream = self.0.name,
                probes,
                "{}'s outage gate opened across the fleet: one call probes, the others wait",
                self.0.name
            );
        }
        self.0.live().changed.notify_waiters();
    }

    /// The fleet's gate closed (another process's probe succeeded): calls go here too.
    pub(crate) fn closed(self) {
        self.0.close(false);
    }

    /// Whether the gate here waits for another process's probe.
    pub(crate) fn waits_for_remote_probe(self) -> bool {
        self.0.lock().gate == Gate::Remote
    }

    /// The fleet's retry budget holds this upstream's retries (`on`: the fleet store is up), or
    /// no longer does (it is degraded: the calls' own quotas bound them, as without a fleet).
    pub(crate) fn budgeted(self, on: bool) {
        let mut state = self.0.lock();
        if state.budgeted == on {
            return;
        }
        state.budgeted = on;
        self.0.store(&state);
        drop(state);
        // A retry held for a token goes once there is no budget to wait for.
        self.0.live().changed.notify_waiters();
    }

    /// For the fleet store: the requests made since it last asked, the tokens held here, and
    /// whether a retry found none since.
    pub(crate) fn drain(self) -> (u32, u32, bool) {
        self.0.live().lease.drain()
    }

    /// The fleet store leased `tokens` more to this process: retries held for one go.
    pub(crate) fn granted(self, tokens: u32) {
        if tokens == 0 {
            return;
        }
        self.0.live().lease.granted(tokens);
        self.0.live().changed.notify_waiters();
    }

    /// The processes sharing the upstream, `members` in all: its pacer paces on its slice.
    pub(crate) fn members(self, members: u32) {
        self.0.live().pacer.share_among(members);
    }

    /// Whether its pacer is on: the fleet keeps its membership counted while any is.
    pub(crate) fn is_paced(self) -> bool {
        self.0.status().is_paced()
    }

    /// Whether it is held by a pause or a gate: the backstop keeps reading while any is.
    pub(crate) fn is_held(self) -> bool {
        self.0.status().is_held()
    }
}
