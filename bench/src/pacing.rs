//! Pacing at twice a key's limit, simulated in virtual time with the library's own engine: 120
//! callers arriving at 20 a second on a key of 10 requests a second with a burst of 10, which
//! refuses with `429` and `Retry-After: 1` past it and says what is left in every answer (as
//! OpenAI's headers do). Each caller runs one call (`Retry::run` on `availability`, tokio's
//! paused clock): on its own, on one [`Upstream`] that shares the pause alone, or on one whose
//! pacer hears the answers (`Upstream::heard_limits`, what `check_status` does with the
//! headers). The server counts requests and refusals per 100 ms.
//!
//! ```
//! use retry_bench::pacing::{Pacing, simulate_pacing};
//!
//! let alone = simulate_pacing(Pacing::Alone);
//! let paced = simulate_pacing(Pacing::Paced);
//! assert!(paced.refused() < alone.refused());
//! assert_eq!(paced.refused(), 0);
//! ```

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use retry_runtime::{Class, Policy, RateLeft, RateSaid, Retry, Upstream, UpstreamPaused};
use tokio::time::Instant;

/// How the callers share the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// Each call its own ladder.
    Alone,
    /// One `Upstream`: a refusal's `Retry-After` pauses every call.
    SharedPause,
    /// One `Upstream` whose pacer hears every answer's limits.
    Paced,
}

impl Pacing {
    /// Its name in the picture's legend.
    pub const fn name(self) -> &'static str {
        match self {
            Pacing::Alone => "each call on its own",
            Pacing::SharedPause => "one Upstream, the shared pause",
            Pacing::Paced => "one Upstream, paced",
        }
    }
}

/// What the server saw, per 100 ms.
#[derive(Debug, Clone, Default)]
pub struct PacingSeen {
    /// Requests, and refusals among them, in each 100 ms from the start.
    pub per_100ms: Vec<(u32, u32)>,
    /// Calls that gave up.
    pub failed: u32,
}

impl PacingSeen {
    /// Refusals in all.
    pub fn refused(&self) -> u32 {
        self.per_100ms.iter().map(|(_, refused)| refused).sum()
    }

    /// Requests in all.
    pub fn requests(&self) -> u32 {
        self.per_100ms.iter().map(|(requests, _)| requests).sum()
    }
}

/// The key: a bucket of 10, refilled at 10 a second.
struct Key {
    started: Instant,
    level: f64,
    at: Instant,
    seen: PacingSeen,
}

const RATE: f64 = 10.0;
const BURST: f64 = 10.0;

impl Key {
    /// One request now: served or refused, and what is left.
    fn request(&mut self) -> (bool, RateSaid) {
        let now = Instant::now();
        self.level = (self.level + now.duration_since(self.at).as_secs_f64() * RATE).min(BURST);
        self.at = now;
        let served = self.level >= 1.0;
        if served {
            self.level -= 1.0;
        }
        let slot = (now.duration_since(self.started).as_millis() / 100) as usize;
        if self.seen.per_100ms.len() <= slot {
            self.seen.per_100ms.resize(slot + 1, (0, 0));
        }
        self.seen.per_100ms[slot].0 += 1;
        self.seen.per_100ms[slot].1 += u32::from(!served);
        let left = RateLeft {
            limit: Some(BURST as u64),
            remaining: self.level.max(0.0) as u64,
            reset: Some(Duration::from_secs_f64((BURST - self.level) / RATE)),
        };
        let said = RateSaid {
            requests: Some(left),
            tokens: None,
        };
        (served, said)
    }
}

/// A refusal, or the upstream's hold.
#[derive(Debug)]
enum Refused {
    Limited,
    Held(UpstreamPaused),
}

impl retry_runtime::Classify for Refused {
    fn classify(&self) -> Class {
        match self {
            Refused::Limited => Class::RateLimited {
                retry_after: Some(Duration::from_secs(1)),
            },
            Refused::Held(paused) => paused.classify(),
        }
    }
}

impl From<UpstreamPaused> for Refused {
    fn from(paused: UpstreamPaused) -> Self {
        Refused::Held(paused)
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("refused")
    }
}

/// Run the 120 callers to the end, in virtual time.
pub fn simulate_pacing(pacing: Pacing) -> PacingSeen {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let upstream: &'static Upstream = Box::leak(Box::new(Upstream::new("key")));
    let local = tokio::task::LocalSet::new();
    let key = runtime.block_on(async {
        let now = Instant::now();
        Rc::new(RefCell::new(Key {
            started: now,
            level: BURST,
            at: now,
            seen: PacingSeen::default(),
        }))
    });
    for caller in 0..120_u64 {
        let key = Rc::clone(&key);
        local.spawn_local(async move {
            tokio::time::sleep(Duration::from_millis(50 * caller)).await;
            let attempt = async |_| {
                let (served, said) = key.borrow_mut().request();
                if pacing == Pacing::Paced {
                    upstream.heard_limits(said);
                }
                if served {
                    Ok(())
                } else {
                    Err(Refused::Limited)
                }
            };
            let retry = Retry::new(&Policy::AVAILABILITY);
            let done = match pacing {
                Pacing::Alone => retry.run(attempt).await.is_ok(),
                _ => retry.upstream(upstream).run(attempt).await.is_ok(),
            };
            key.borrow_mut().seen.failed += u32::from(!done);
        });
    }
    runtime.block_on(local);
    key.borrow().seen.clone()
}
