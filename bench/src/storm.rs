//! A retry storm, simulated in virtual time with the library's own engine: many clients call a
//! server that is down for a stretch and then recovers with less capacity than the demand, so
//! one can see what jitter and a shared [`Quota`] do to the load and to the recovery.
//!
//! Each client has one job. It runs the job as a retried call (`Retry::run`, the real engine,
//! on tokio's paused clock, with a seeded jitter source); when the ladder gives up, the client
//! waits `resubmit` and runs a new call, until the job succeeds, as a queue redelivers a
//! message. The server fails every attempt during the outage; after it, it serves at most
//! `capacity` attempts per second and answers the rest `Unavailable`. No socket is opened and
//! nothing sleeps for real: a run of 100,000 clients takes seconds.
//!
//! ```
//! use retry_bench::storm::{Storm, simulate};
//! use retry_runtime::{Jitter, Policy};
//! use std::time::Duration;
//!
//! let storm = Storm {
//!     clients: 1_000,
//!     outage: Duration::from_secs(30),
//!     capacity: 100,
//!     resubmit: Duration::from_secs(5),
//!     policy: Policy::AVAILABILITY.with_jitter(Jitter::Full),
//!     quota: true,
//!     upstream: false,
//!     keyed: false,
//! };
//! let outcome = simulate(&storm);
//! assert!(outcome.attempts_per_call_in_outage() <= 1.1);
//! ```

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use retry_runtime::{Class, Clock, Draw, Policy, Quota, Retry, Upstream, Upstreams};
use tokio::time::Instant;

/// One storm to simulate.
#[derive(Debug, Clone, Copy)]
pub struct Storm {
    /// How many clients, each with one job; they start spread over the first second.
    pub clients: u32,
    /// How long the server fails every attempt, from the start.
    pub outage: Duration,
    /// The attempts per second the server serves once it is back; the rest get `Unavailable`.
    pub capacity: u32,
    /// How long a client waits after a ladder gives up before it runs the job again.
    pub resubmit: Duration,
    /// The retry policy of every call.
    pub policy: Policy,
    /// Whether the calls share one AWS-standard [`Quota`] (500 tokens).
    pub quota: bool,
    /// Whether the calls share one [`Upstream`]: its pause and its outage gate.
    pub upstream: bool,
    /// A keyed rate limit: the server refuses past `capacity` a second with `RateLimited` and
    /// a hint until the next second (as a provider's `Retry-After`), instead of `Unavailable`
    /// with none.
    pub keyed: bool,
}

impl Storm {
    /// `clients` calls on one key, on `availability`'s ladder: `keyed`, a limit of `capacity`
    /// a second answered `429` with a hint; otherwise, down 30 s, then `503` past `capacity`.
    pub fn on_one_key(clients: u32, capacity: u32, keyed: bool) -> Storm {
        Storm {
            clients,
            outage: if keyed {
                Duration::ZERO
            } else {
                Duration::from_secs(30)
            },
            capacity,
            resubmit: Duration::from_secs(5),
            policy: Policy::AVAILABILITY,
            quota: false,
            upstream: true,
            keyed,
        }
    }
}

/// What a storm did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Retried calls (logical calls) started while the server was down.
    pub calls_in_outage: u64,
    /// Attempts made while the server was down.
    pub attempts_in_outage: u64,
    /// The most attempts the server saw in any one second.
    pub peak_per_second: u64,
    /// From the end of the outage until the last job succeeded.
    pub clear_after_recovery: Duration,
    /// Attempts in all.
    pub attempts: u64,
    /// Attempts made inside a pause the server had announced with a hint.
    pub inside_pause: u64,
    /// Logical calls in all.
    pub calls: u64,
}

impl Outcome {
    /// Attempts per logical call during the outage: how much the retries multiplied the load
    /// on a server that could not answer.
    pub fn attempts_per_call_in_outage(&self) -> f64 {
        self.attempts_in_outage as f64 / self.calls_in_outage.max(1) as f64
    }
}

/// The server and what it saw.
#[derive(Debug)]
struct Server {
    started: Instant,
    outage: Duration,
    capacity: u32,
    /// Attempts seen in each second since the start.
    per_second: Vec<u64>,
    /// Attempts served in each second since the end of the outage.
    served: Vec<u32>,
    calls_in_outage: u64,
    attempts_in_outage: u64,
    last_success: Duration,
    keyed: bool,
    /// The end of the pause the server last announced.
    announced_until: Duration,
    inside_pause: u64,
    calls: u64,
}

impl Server {
    fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(self.started)
    }

    fn call_started(&mut self) {
        self.calls += 1;
        if self.elapsed() < self.outage {
            self.calls_in_outage += 1;
        }
    }

    fn attempt(&mut self) -> Result<(), Class> {
        let now = self.elapsed();
        let second = usize::try_from(now.as_secs()).unwrap_or(usize::MAX);
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] += 1;
        if now < self.announced_until {
            self.inside_pause += 1;
        }
        if now < self.outage {
            self.attempts_in_outage += 1;
            return Err(Class::Unavailable { retry_after: None });
        }
        let window = usize::try_from((now - self.outage).as_secs()).unwrap_or(usize::MAX);
        if self.served.len() <= window {
            self.served.resize(window + 1, 0);
        }
        if self.served[window] >= self.capacity {
            if !self.keyed {
                return Err(Class::Unavailable { retry_after: None });
            }
            // Refused until the next second, and told so.
            let next = self.outage + Duration::from_secs(window as u64 + 1);
            self.announced_until = self.announced_until.max(next);
            let retry_after = Some(next - now);
            return Err(Class::RateLimited { retry_after });
        }
        self.served[window] += 1;
        self.last_success = self.last_success.max(now);
        Ok(())
    }
}

/// tokio's paused clock, and jitter from a seeded generator, so a storm is reproducible.
#[derive(Debug, Clone, Copy)]
struct SeededClock(&'static AtomicU64);

impl Clock for SeededClock {
    type Sleep = tokio::time::Sleep;

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, wait: Duration) -> tokio::time::Sleep {
        tokio::time::sleep(wait)
    }

    fn draw(&self) -> Draw {
        // splitmix64: one step of the sequence per draw.
        let mut z = self
            .0
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Draw::from_bits(((z ^ (z >> 31)) >> 32) as u32)
    }
}

/// Run `storm` to the end, in virtual time.
pub fn simulate(storm: &Storm) -> Outcome {
    run_storm(storm, || {
        let upstream: &'static Upstream = Box::leak(Box::new(Upstream::new("storm")));
        if storm.upstream {
            vec![upstream]
        } else {
            Vec::new()
        }
    })
}

/// Run `storm` with its clients spread over `processes` processes, each with its own
/// [`Upstream`]; with `fleet`, the processes share their upstreams through an in-memory fleet
/// store (`fleet::FleetMemory`, the fleet store's rules without Redis), as a fleet shares them
/// through Redis.
///
/// ```
/// use retry_bench::storm::{Storm, simulate_fleet};
/// use retry_runtime::Policy;
/// use std::time::Duration;
///
/// let storm = Storm {
///     clients: 200,
///     outage: Duration::ZERO,
///     capacity: 20,
///     resubmit: Duration::from_secs(5),
///     policy: Policy::AVAILABILITY,
///     quota: false,
///     upstream: true,
///     keyed: true,
/// };
/// let alone = simulate_fleet(&storm, 4, false);
/// let shared = simulate_fleet(&storm, 4, true);
/// assert!(shared.inside_pause < alone.inside_pause);
/// ```
pub fn simulate_fleet(storm: &Storm, processes: u32, fleet: bool) -> Outcome {
    use retry_runtime::fleet::{Fleet, FleetConfig, FleetMemory};
    run_storm(storm, || {
        let memory = std::sync::Arc::new(FleetMemory::default());
        (0..processes.max(1))
            .map(|_| {
                let upstream: &'static Upstream = Box::leak(Box::new(Upstream::new("storm")));
                if fleet {
                    let store = Fleet::in_memory(&memory, FleetConfig::new("storm"))
                        .expect("inside the storm's runtime");
                    store.share(upstream);
                    // A fleet shares while a handle lives: this one lives as long as the
                    // storm's leaked upstream does.
                    Box::leak(Box::new(store));
                }
                upstream
            })
            .collect()
    })
}

/// Run `storm` to the end, in virtual time, client `n` on the upstream `n` modulo the ones
/// `upstreams` makes inside the storm's runtime (none: each call alone).
fn run_storm(storm: &Storm, upstreams: impl FnOnce() -> Vec<&'static Upstream>) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    // A storm's engine state must be `'static` (a `Retry` draws on a `&'static Quota`); one
    // quota and one seed per storm, kept for the life of the process.
    let quota: &'static Quota = Box::leak(Box::new(Quota::standard()));
    let seed: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0x5EED)));
    let upstreams = {
        let _entered = runtime.enter();
        upstreams()
    };
    let local = tokio::task::LocalSet::new();
    let server = Rc::new(RefCell::new(Server {
        started: runtime.block_on(async { Instant::now() }),
        outage: storm.outage,
        capacity: storm.capacity,
        per_second: Vec::new(),
        served: Vec::new(),
        calls_in_outage: 0,
        attempts_in_outage: 0,
        last_success: Duration::ZERO,
        keyed: storm.keyed,
        announced_until: Duration::ZERO,
        inside_pause: 0,
        calls: 0,
    }));
    // One policy for the storm, shared by every client's calls.
    let policy = Rc::new(storm.policy);
    for client in 0..storm.clients {
        let mut retry = Retry::new(Rc::clone(&policy))
            .named("storm")
            .with_clock(SeededClock(seed));
        if storm.quota {
            retry = retry.with_quota(quota);
        }
        let server = Rc::clone(&server);
        let offset = Duration::from_secs(1) * client / storm.clients.max(1);
        let resubmit = storm.resubmit;
        let shared = (!upstreams.is_empty()).then(|| upstreams[client as usize % upstreams.len()]);
        local.spawn_local(async move {
            tokio::time::sleep(offset).await;
            // backoff-lint: allow(a client resubmitting on its own schedule is the storm being modelled)
            loop {
                server.borrow_mut().call_started();
                let attempt = async |_| server.borrow_mut().attempt();
                let done = match shared {
                    Some(upstream) => retry.clone().upstream(upstream).run(attempt).await,
                    None => retry.clone().run(attempt).await,
                }
                .is_ok();
                if done {
                    break;
                }
                tokio::time::sleep(resubmit).await;
            }
        });
    }
    runtime.block_on(local);
    let server = server.borrow();
    Outcome {
        calls_in_outage: server.calls_in_outage,
        attempts_in_outage: server.attempts_in_outage,
        peak_per_second: server.per_second.iter().copied().max().unwrap_or(0),
        clear_after_recovery: server.last_success.saturating_sub(server.outage),
        attempts: server.per_second.iter().sum(),
        inside_pause: server.inside_pause,
        calls: server.calls,
    }
}

/// A primary outage with a secondary to fall back to: `clients` calls arriving evenly over
/// `arrivals`, the primary down (`Unavailable`, no hint) for `outage` from the start, both
/// upstreams answering in `latency` when up. Simulated in virtual time, as [`simulate`].
///
/// ```
/// use retry_bench::storm::{Fallback, simulate_fallback};
/// use std::time::Duration;
///
/// let storm = Fallback {
///     clients: 100,
///     arrivals: Duration::from_secs(10),
///     outage: Duration::from_secs(5),
///     latency: Duration::from_millis(20),
///     across: true,
/// };
/// let outcome = simulate_fallback(&storm);
/// assert_eq!(outcome.failed, 0);
/// assert!(outcome.primary_in_outage < 10);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Fallback {
    /// How many calls.
    pub clients: u32,
    /// The calls arrive evenly over this long.
    pub arrivals: Duration,
    /// How long the primary fails every attempt, from the start.
    pub outage: Duration,
    /// How long an upstream that is up takes to answer.
    pub latency: Duration,
    /// `true`: each call goes across the two (`Retry::across`); `false`: by hand, the
    /// primary's whole ladder (`availability`), then the secondary's.
    pub across: bool,
}

/// What a fallback storm did.
#[derive(Debug, Clone, PartialEq)]
pub struct FallbackOutcome {
    /// Requests to the primary in all, and during its outage.
    pub primary: u64,
    /// Requests to the primary during its outage.
    pub primary_in_outage: u64,
    /// Requests to the secondary.
    pub secondary: u64,
    /// The mean call's time above one healthy answer.
    pub mean_added: Duration,
    /// Calls that failed in the end.
    pub failed: u64,
}

/// Run a fallback storm to the end, in virtual time.
pub fn simulate_fallback(storm: &Fallback) -> FallbackOutcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let seed: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0x5EED)));
    let primary: &'static Upstream = Box::leak(Box::new(Upstream::new("primary")));
    let secondary: &'static Upstream = Box::leak(Box::new(Upstream::new("secondary")));
    let pair: &'static [&'static Upstream] = Box::leak(Box::new([primary, secondary]));
    let set: &'static Upstreams = Box::leak(Box::new(Upstreams::new(pair)));
    let started = runtime.block_on(async { Instant::now() });
    // (primary, in its outage, secondary, total call time, failed)
    let seen = Rc::new(RefCell::new((0_u64, 0_u64, 0_u64, Duration::ZERO, 0_u64)));
    let local = tokio::task::LocalSet::new();
    let (outage, latency, across) = (storm.outage, storm.latency, storm.across);
    for client in 0..storm.clients {
        let retry = Retry::new(&Policy::AVAILABILITY)
            .named("fallback")
            .with_clock(SeededClock(seed));
        let seen = Rc::clone(&seen);
        let offset = storm.arrivals * client / storm.clients.max(1);
        local.spawn_local(async move {
            tokio::time::sleep(offset).await;
            let began = Instant::now();
            let attempt = async |to: &'static Upstream| {
                let down = std::ptr::eq(to, primary) && started.elapsed() < outage;
                {
                    let mut seen = seen.borrow_mut();
                    match std::ptr::eq(to, primary) {
                        true => seen.0 += 1,
                        false => seen.2 += 1,
                    }
                    seen.1 += u64::from(down);
                }
                if down {
                    return Err(Class::Unavailable { retry_after: None });
                }
                tokio::time::sleep(latency).await;
                Ok(())
            };
            let ok = if across {
                retry.across(set).run(attempt).await.is_ok()
            } else {
                let first = retry.run(async |_| attempt(primary).await).await;
                first.is_ok() || retry.run(async |_| attempt(secondary).await).await.is_ok()
            };
            let mut seen = seen.borrow_mut();
            seen.3 += began.elapsed();
            seen.4 += u64::from(!ok);
        });
    }
    runtime.block_on(local);
    let seen = seen.borrow();
    let mean = seen.3 / storm.clients.max(1);
    FallbackOutcome {
        primary: seen.0,
        primary_in_outage: seen.1,
        secondary: seen.2,
        mean_added: mean.saturating_sub(latency),
        failed: seen.4,
    }
}
