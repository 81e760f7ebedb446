//! One of a key's limits as a bucket that refills evenly: what was left when last said (less
//! what was sent since), its limit, its rate, and what waiting calls have reserved of it.

use std::time::Duration;

use tokio::time::Instant;

use super::said::RateLeft;

/// A shortfall this small is rounding, not a refusal: a wait ends on a whole millisecond.
const EPSILON: f64 = 1e-6;

/// A limit of a key, as a bucket. Unknown (never said) until [`said`](Bucket::said): it then
/// holds every attempt to what it has.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bucket {
    /// When `level` was true; `None`: nothing known, nothing held.
    at: Option<Instant>,
    /// What was left at `at`.
    level: f64,
    /// The most it holds.
    limit: f64,
    /// What it refills per second; 0: unknown, whole again at `whole_at`.
    rate: f64,
    /// When the provider said it would be whole again, where it gave no rate.
    whole_at: Option<Instant>,
    /// What calls waiting for it have reserved.
    reserved: f64,
}

impl Bucket {
    pub(super) const fn new() -> Bucket {
        Bucket {
            at: None,
            level: 0.0,
            limit: f64::INFINITY,
            rate: 0.0,
            whole_at: None,
            reserved: 0.0,
        }
    }

    /// A bucket of `rate` a second holding at most `limit`, full now: a learned rate's.
    pub(super) const fn steady(rate: f64, limit: f64, now: Instant) -> Bucket {
        Bucket {
            at: Some(now),
            level: limit,
            limit,
            rate,
            whole_at: None,
            reserved: 0.0,
        }
    }

    pub(super) const fn is_known(&self) -> bool {
        self.at.is_some()
    }

    pub(super) fn rate(&self) -> Option<f64> {
        (self.is_known() && self.rate > 0.0).then_some(self.rate)
    }

    /// Set the refill rate from now on (what was left so far refilled at the old one).
    pub(super) fn set_rate(&mut self, rate: f64, limit: f64, now: Instant) {
        self.level = self.level_at(now);
        self.at = Some(now);
        self.rate = rate;
        self.limit = limit;
    }

    /// What it holds at `now`.
    fn level_at(&self, now: Instant) -> f64 {
        let Some(at) = self.at else {
            return f64::INFINITY;
        };
        let elapsed = now.saturating_duration_since(at).as_secs_f64();
        if self.rate > 0.0 {
            (self.level + self.rate * elapsed).min(self.limit)
        } else if self.whole_at.is_some_and(|whole| whole <= now) && self.limit.is_finite() {
            self.limit
        } else {
            self.level
        }
    }

    /// What it holds at `now` that no waiting call reserved (infinite while unknown).
    pub(super) fn room(&self, now: Instant) -> f64 {
        self.level_at(now) - self.reserved
    }

    /// Whether `cost` is more than the whole limit: it could never be sent.
    pub(super) fn exceeds_limit(&self, cost: f64) -> bool {
        self.is_known() && self.limit.is_finite() && cost > self.limit + EPSILON
    }

    /// How long until it holds `cost` at `now`, behind what others reserved if `behind`.
    pub(super) fn wait_for(&self, now: Instant, cost: f64, behind: bool) -> Duration {
        if !self.is_known() || cost <= 0.0 {
            return Duration::ZERO;
        }
        let ahead = if behind { self.reserved } else { 0.0 };
        let short = cost + ahead - self.level_at(now);
        if short <= EPSILON {
            return Duration::ZERO;
        }
        if self.rate > 0.0 {
            return Duration::from_secs_f64((short / self.rate).min(86_400.0));
        }
        // No rate: until the provider said it would be whole, or a second from now.
        match self.whole_at {
            Some(whole) if whole > now => whole - now,
            _ => Duration::from_secs(1),
        }
    }

    /// Take `cost` at `now` (a negative one gives back).
    pub(super) fn debit(&mut self, now: Instant, cost: f64) {
        if self.is_known() && cost != 0.0 {
            self.level = self.level_at(now) - cost;
            self.at = Some(now);
        }
    }

    pub(super) fn reserve(&mut self, cost: f64) {
        if self.is_known() {
            self.reserved += cost;
        }
    }

    pub(super) fn unreserve(&mut self, cost: f64) {
        self.reserved = (self.reserved - cost).max(0.0);
    }

    /// A report: `left` as the provider counted it, less `since` sent by this process after
    /// the request it answers, this process's `share` of it, at `now`.
    pub(super) fn said(&mut self, left: RateLeft, since: f64, share: f64, now: Instant) {
        let limit = left
            .limit
            .map_or(f64::INFINITY, |limit| limit as f64 * share);
        self.level = (left.remaining as f64 * share - since).min(limit);
        self.limit = limit;
        if let Some(rate) = left.rate_per_second() {
            self.rate = rate * share;
        }
        self.whole_at = left.reset.map(|reset| crate::clock::later(now, reset));
        self.at = Some(now);
    }
}
