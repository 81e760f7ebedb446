//! How an upstream answers its calls: what it says of an attempt about to
//! be made, and what a success, a failure or a dropped probe changes. What changed is decided
//! under the upstream's lock and told (metrics, tracing, the fleet) after it is released.

use std::time::Duration;

use tokio::time::Instant;

use super::{Admission, Gate, Upstream, UpstreamEffect, later, probe_wait};
use crate::class::Class;
use crate::clock::{Clock, TokioClock};
use crate::meter::{self, UpstreamSeries};
use crate::pace::{Ask, Paces, RateSaid};
use crate::policy::Policy;

/// What a driver of its own (a loop the library does not run) asks an upstream and tells it
/// around each attempt; `#[retry]`, `Retry` and the layers do it themselves.
///
/// ```
/// use retry_runtime::{Admission, Class, Policy, Upstream};
/// use tokio::time::Instant;
///
/// static KEY: Upstream = Upstream::new("key");
/// let now = Instant::now();
/// let admitted = KEY.admit(now);
/// assert!(matches!(admitted, Admission::Send { probe: None, .. }));
/// // A 429 that asks for 30 s pauses every call on the key.
/// let limited = Class::RateLimited { retry_after: Some(std::time::Duration::from_secs(30)) };
/// KEY.failed(admitted, limited, now, &Policy::AVAILABILITY);
/// assert!(matches!(KEY.admit(now), Admission::Paused { .. }));
/// ```
impl Upstream {
    /// What the upstream says of an attempt about to be made at `now`.
    #[inline]
    pub fn admit(&self, now: Instant) -> Admission {
        self.admit_for(now, 0, Ask::Try)
    }

    /// An attempt admitted as `admitted` succeeded.
    #[inline]
    pub fn succeeded(&self, admitted: Admission) {
        // Nothing was said when the attempt was admitted: nothing to clear (a failure
        // reported meanwhile by a call that started later is left to count).
        if let Admission::Send { probe: None, seen } = admitted {
            if seen.is_paced() {
                // A rate learned from refusals climbs back on each success.
                self.live().pacer.succeeded(TokioClock.now());
            }
            if !seen.has_to_clear() {
                return;
            }
        }
        self.cleared(admitted);
    }

    /// An attempt admitted as `admitted` failed at `now` with `class` (its hint included), on
    /// the caller's `policy` (whose ladder the probes follow, and whose `max_retry_after` caps
    /// a pause unless the upstream sets its own).
    pub fn failed(&self, admitted: Admission, class: Class, now: Instant, policy: &Policy) {
        let effect = self.effect_of(class, policy);
        if let Class::RateLimited { retry_after: None } = class {
            // A refusal that said nothing (no hint; its headers, if any, already told the
            // pacer): a rate is learned from it.
            self.refused_unsaid(now);
        }
        if effect == UpstreamEffect::Clears {
            // An answer: the upstream is up.
            self.cleared(admitted);
            return;
        }
        // What changed is decided under the lock; it is told (metrics, tracing, the fleet)
        // after it is released, so that nothing told can find the lock held.
        let mut told = Told::default();
        let mut state = self.lock();
        let probe = match admitted {
            Admission::Send {
                probe: Some(epoch), ..
            } => epoch == state.epoch,
            _ => false,
        };
        if let UpstreamEffect::Pause(pause) = effect {
            let until = later(now, pause);
            // The latest end wins: a later, shorter hint never shortens a pause.
            if state.paused_until.is_none_or(|(end, _)| end < until) {
                state.paused_until = Some((until, class));
                told.paused = Some(pause);
            }
        }
        if effect == UpstreamEffect::Outage {
            let fresh = state
                .first_failure
                .is_none_or(|first| now.saturating_duration_since(first) > self.gate_window);
            if fresh {
                state.failures = 0;
                state.first_failure = Some(now);
            }
            state.failures = state.failures.saturating_add(1);
            told.outage = true;
            if state.gate == Gate::Closed && state.failures >= self.gate_failures {
                let next = later(now, probe_wait(policy, 0));
                state.gate = Gate::Waiting { next, failed: 0 };
                told.opened = Some(state.failures);
            }
        }
        if probe && let Gate::Probing { failed } = state.gate {
            // A failed probe schedules the next, on the policy's ladder.
            let failed = failed.saturating_add(1);
            let wait = probe_wait(policy, failed);
            state.gate = Gate::Waiting {
                next: later(now, wait),
                failed,
            };
            told.probe_failed = Some(wait);
        }
        self.store(&state);
        drop(state);
        self.tell(told, class, policy);
    }

    /// An attempt admitted as `admitted` ended with no outcome (dropped, cancelled): a probe is
    /// freed at once.
    pub fn released(&self, admitted: Admission) {
        let Admission::Send {
            probe: Some(epoch), ..
        } = admitted
        else {
            return;
        };
        let mut state = self.lock();
        if epoch != state.epoch {
            return;
        }
        if let Gate::Probing { failed } = state.gate {
            // The next call probes now: the gate never wedges.
            state.gate = Gate::Waiting {
                next: Instant::now(),
                failed,
            };
            self.store(&state);
            drop(state);
            self.live().changed.notify_waiters();
        }
    }
}

/// What a failure changed in an upstream, decided under its lock and told after.
impl Upstream {
    /// What the upstream says of an attempt of `tokens` about to be made at `now`: its pause
    /// and gate first, then its pacer, asked as `ask` says (a redeemed reservation the
    /// attempt cannot use now is given back).
    pub(crate) fn admit_for(&self, now: Instant, tokens: u32, ask: Ask) -> Admission {
        let admission = self.admit_held(now);
        let paced = matches!(admission, Admission::Send { probe: None, seen } if seen.is_paced());
        if !paced {
            if ask == Ask::Redeem {
                self.live().pacer.release(tokens);
            }
            return admission;
        }
        match self.live().pacer.take(now, tokens, ask) {
            Paces::Go => admission,
            Paces::Wait(until) => Admission::Paced { until },
            Paces::Never => Admission::OverLimit,
        }
    }

    /// What the upstream's pause and gate say of an attempt about to be made at `now`.
    fn admit_held(&self, now: Instant) -> Admission {
        if let Some(seen) = self.quiet() {
            return Admission::Send { probe: None, seen };
        }
        let seen = self.status();
        let mut probed = None;
        let mut state = self.lock();
        if let Some((until, class)) = state.paused_until {
            if until > now {
                return Admission::Paused { until, class };
            }
            state.paused_until = None;
        }
        let admission = match state.gate {
            Gate::Closed => Admission::Send { probe: None, seen },
            Gate::Waiting { next, failed } if next <= now => {
                state.gate = Gate::Probing { failed };
                probed = Some(failed);
                Admission::Send {
                    probe: Some(state.epoch),
                    seen,
                }
            }
            Gate::Waiting { next, .. } => Admission::Gated {
                next_probe: Some(next),
            },
            Gate::Probing { .. } | Gate::Remote => Admission::Gated { next_probe: None },
        };
        self.store(&state);
        drop(state);
        // Told after the lock is released.
        if let Some(failed) = probed {
            meter::upstream(self.name, UpstreamSeries::Probe);
            tracing::debug!(target: "retry", upstream = self.name, failed, "{} is probed", self.name);
        }
        admission
    }
}

#[derive(Debug, Default)]
struct Told {
    /// Paused this long.
    paused: Option<Duration>,
    /// An outage failure, counted.
    outage: bool,
    /// The gate opened, after this many failures.
    opened: Option<u32>,
    /// The gate's probe failed; the next goes after this wait.
    probe_failed: Option<Duration>,
}

impl Upstream {
    /// Tell what a failure of `class` changed: the fleet, the metrics, the log, and the calls
    /// waiting for a change. Never under the upstream's lock.
    fn tell(&self, told: Told, class: Class, policy: &Policy) {
        let fleet = told.paused.is_some() || told.outage || told.probe_failed.is_some();
        let sink = fleet.then(|| self.sink()).flatten();
        if let Some(pause) = told.paused {
            if let Some(shared) = &sink {
                let cap = self.max_pause.unwrap_or(policy.max_retry_after());
                shared.paused(self.name, pause, cap, class);
            }
            meter::upstream(self.name, UpstreamSeries::Paused);
            tracing::info!(
                target: "retry",
                upstream = self.name,
                pause_ms = u64::try_from(pause.as_millis()).unwrap_or(u64::MAX),
                "{} is paused for every call",
                self.name
            );
        }
        if told.outage
            && let Some(shared) = &sink
        {
            shared.outage(self.name, class, probe_wait(policy, 0));
        }
        if let Some(failures) = told.opened {
            meter::upstream(self.name, UpstreamSeries::GateOpened);
            tracing::warn!(
                target: "retry",
                upstream = self.name,
                failures,
                "{}'s outage gate opened: one call probes, the others wait",
                self.name
            );
        }
        if let (Some(wait), Some(shared)) = (told.probe_failed, &sink) {
            shared.probe_failed(self.name, wait);
        }
        if told.paused.is_some() || told.opened.is_some() || told.probe_failed.is_some() {
            self.live().changed.notify_waiters();
        }
    }
}

impl Upstream {
    /// An answer to the send numbered `seq` said this of the key: the pacer takes it, and the
    /// upstream's word says it paces from the first one on. An answer that said nothing of
    /// the key is counted, for the rate a key that refuses without saying why is learned at.
    pub(crate) fn said(&self, said: Option<RateSaid>, seq: u32) {
        // On the calls' clock: a testing scope's skipped waits included.
        let now = TokioClock.now();
        let Some(said) = said.filter(|said| !said.is_empty()) else {
            self.live().pacer.answered(now);
            return;
        };
        if self.live().pacer.said(said, seq, now) {
            self.pacing("heard its rate limits");
        }
        #[cfg(feature = "metrics")]
        if let Some(rate) = self.live().pacer.rate() {
            meter::upstream(self.name, UpstreamSeries::PaceRate(rate));
        }
    }

    /// The upstream's pacer.
    pub(crate) fn pacer(&self) -> &crate::pace::Pacer {
        &self.live().pacer
    }

    /// A waiting attempt gives back the slot of `tokens` its pacer reserved.
    pub(crate) fn pace_release(&self, tokens: u32) {
        self.live().pacer.release(tokens);
    }

    /// Sends so far by its pacer: what an attempt's wrapper hands back with the answer.
    #[inline]
    pub(crate) fn pace_sent(&self) -> u32 {
        self.live().pacer.sent()
    }

    /// A refusal with nothing said, at `now`: a rate is learned from it.
    fn refused_unsaid(&self, now: Instant) {
        if self.live().pacer.refused(now) {
            self.pacing("refused without saying its limits: learning a rate");
        }
        #[cfg(feature = "metrics")]
        if let Some(rate) = self.live().pacer.rate() {
            meter::upstream(self.name, UpstreamSeries::PaceRate(rate));
        }
    }

    /// The pacer is on: the word says so, told after the lock is released.
    #[cold]
    fn pacing(&self, why: &'static str) {
        let mut state = self.lock();
        state.paced = true;
        self.store(&state);
        drop(state);
        if let Some(shared) = self.sink() {
            shared.paced(self.name);
        }
        meter::upstream(self.name, UpstreamSeries::Paced);
        tracing::info!(target: "retry", upstream = self.name, "{} {why}: its calls are paced", self.name);
    }
}
