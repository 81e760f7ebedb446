//! A rate learned from refusals, for a key that says nothing of its limits (no headers, no
//! hint): AWS's adaptive retry mode, as its SDKs ship it. Off until the first refusal; each
//! refusal cuts the rate to 70 % of what was being sent; each success climbs it back on a
//! cubic curve, slowly near the rate of the last refusal and faster past it.

use tokio::time::Instant;

use super::bucket::Bucket;

/// The cut on a refusal (CUBIC's β, as AWS's SDKs use it).
const BETA: f64 = 0.7;
/// How fast the rate climbs back (CUBIC's C, as AWS's SDKs use it).
const SCALE: f64 = 0.4;
/// The slowest a learned rate goes, a send every two seconds.
const MIN_RATE: f64 = 0.5;
/// The window the sending rate is measured over, and how much each new window counts.
const WINDOW: f64 = 0.5;
const SMOOTHING: f64 = 0.8;

#[derive(Debug, Clone, Copy)]
pub(super) struct Learner {
    on: bool,
    /// The rate at the last refusal (CUBIC's `W_max`), and when it came.
    last_max: f64,
    last_refusal: Option<Instant>,
    /// The rate sent at, measured: sends in the current window, since when, and smoothed.
    window_sends: f64,
    window_start: Option<Instant>,
    measured: f64,
    /// What it lets through: a bucket of one send at the learned rate.
    bucket: Bucket,
}

impl Learner {
    pub(super) const fn new() -> Learner {
        Learner {
            on: false,
            last_max: 0.0,
            last_refusal: None,
            window_sends: 0.0,
            window_start: None,
            measured: 0.0,
            bucket: Bucket::new(),
        }
    }

    pub(super) const fn is_on(&self) -> bool {
        self.on
    }

    pub(super) fn off(&mut self) {
        self.on = false;
        self.bucket = Bucket::new();
    }

    pub(super) const fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    pub(super) fn rate(&self) -> f64 {
        self.bucket.rate().unwrap_or(0.0)
    }

    pub(super) fn reserve(&mut self, cost: f64) {
        self.bucket.reserve(cost);
    }

    pub(super) fn unreserve(&mut self, cost: f64) {
        self.bucket.unreserve(cost);
    }

    /// A send at `now`: taken from the bucket if on.
    pub(super) fn sent(&mut self, now: Instant) {
        if self.on {
            self.bucket.debit(now, 1.0);
        }
    }

    /// An answer at `now`, refusals included: the rate the key is sent at, measured (as AWS's
    /// SDKs measure it, by what comes back).
    pub(super) fn answered(&mut self, now: Instant) {
        let start = *self.window_start.get_or_insert(now);
        let elapsed = now.saturating_duration_since(start).as_secs_f64();
        if elapsed >= WINDOW {
            let rate = self.window_sends / elapsed;
            self.measured = if self.measured == 0.0 {
                rate
            } else {
                rate * SMOOTHING + self.measured * (1.0 - SMOOTHING)
            };
            self.window_sends = 0.0;
            self.window_start = Some(now);
        }
        self.window_sends += 1.0;
    }

    /// The cubic's zero: how long after a refusal the climb reaches the rate it was cut from.
    fn zero_point(&self) -> f64 {
        (self.last_max * (1.0 - BETA) / SCALE).cbrt()
    }

    /// A refusal at `now`: the rate is cut. Returns whether it was off until now.
    pub(super) fn throttled(&mut self, now: Instant) -> bool {
        let was_on = self.on;
        let sending = if self.measured > 0.0 {
            self.measured
        } else {
            self.window_sends.max(1.0)
        };
        let current = if was_on {
            sending.min(self.rate())
        } else {
            sending
        };
        self.last_max = current;
        self.last_refusal = Some(now);
        let rate = (current * BETA).max(MIN_RATE);
        self.on = true;
        self.bucket = Bucket::steady(rate, 1.0, now);
        self.bucket.debit(now, 1.0);
        !was_on
    }

    /// A success at `now`: the rate climbs on the cubic, at most twice what is being sent.
    pub(super) fn succeeded(&mut self, now: Instant) {
        let Some(refusal) = self.last_refusal else {
            return;
        };
        let since = now.saturating_duration_since(refusal).as_secs_f64();
        let cubic = SCALE * (since - self.zero_point()).powi(3) + self.last_max;
        let ceiling = if self.measured > 0.0 {
            2.0 * self.measured
        } else {
            cubic
        };
        let rate = cubic.min(ceiling).max(MIN_RATE);
        self.bucket.set_rate(rate, 1.0, now);
    }
}
