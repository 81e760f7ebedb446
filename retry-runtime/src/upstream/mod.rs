//! [`Upstream`]: what many calls share and what a provider's answer describes (one API key at
//! one provider, one deployment, one host), so that they share what it said. A provider's
//! pause holds for every call on it, and in an outage one call probes while the others wait.
//!
//! The state is in-process, read and told through four methods of [`Upstream`]: read it
//! ([`admit`](Upstream::admit)), report a failure with its class and hint, report a success,
//! and release a probe. The common path is one atomic read: an upstream
//! with nothing to say costs a first try no lock and no allocation.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::class::Class;
use crate::ladder;
use crate::meter::{self, UpstreamSeries};
use crate::pace::Pacer;
use crate::policy::Policy;

mod current;
mod fleet_side;
mod lease;
mod paused;
mod status;
mod store;

// Unnamed outside the crate: what `Place::polled` returns, which the expansion awaits.
#[allow(unreachable_pub)]
pub use current::OnUpstream;
#[cfg(feature = "reqwest")]
pub(crate) use current::heard;
#[cfg_attr(not(feature = "stream"), allow(unused_imports))]
pub(crate) use current::on;
use lease::BudgetLease;
pub use paused::{PausedBy, UpstreamPaused};
pub use status::UpstreamStatus;

/// The outage gate's defaults: opened by three outage failures within ten seconds with no
/// success between, so one caller's broken connection does not close an upstream to everyone.
const GATE_FAILURES: u32 = 3;
const GATE_WINDOW: Duration = Duration::from_secs(10);

/// What many calls share and what a provider's answer describes: one API key at a provider,
/// one model deployment, one host. Declared as a `static` with a name, as a
/// [`Quota`](crate::Quota) is, and given to a retry with
/// [`Retry::upstream`](crate::Retry::upstream) or `#[retry(upstream = PATH)]`. The rules are
/// written once, in [the guide's upstreams chapter](crate::guide::upstreams); in short:
///
/// - **The shared pause.** A provider's hint of when to come back (`Retry-After`,
///   `retry-after-ms`, Google's `RetryInfo`, gRPC's pushback) on a `RateLimited` or
///   `Unavailable` failure of any call pauses the upstream until the hint's end: every call's
///   next attempt on it waits until then, first tries included. A later, shorter hint never
///   shortens a pause; a pause is capped at [`max_pause`](Self::max_pause) (by default the
///   policy's `max_retry_after`). Waiters wake spread over a tenth of the pause (between
///   100 ms and 1 s), as a hint's own jitter spreads them.
/// - **The outage gate.** When calls meet outage failures (`Unavailable` without a hint,
///   `Transport`) three times within ten seconds with no success between
///   ([`gate_after`](Self::gate_after)), the gate opens: one call at a time sends a real
///   attempt, the probe, on the policy's ladder; every other call's attempt waits, woken when
///   the gate closes. A probe's success, or an answer, closes it. A waiting call gives up when
///   what its ladder could still wait, its turn or its budget ends (`StopReason::Held`),
///   undetermined: outages delay, never fail fast. A probe dropped mid-attempt frees the probe
///   at once.
/// - **The pacer.** Every answer's rate-limit headers (OpenAI's, Anthropic's), a success's
///   too, tell the upstream what its key has left; each attempt, first tries included, then
///   waits until the key holds what it costs. A key that says nothing is paced on a rate
///   learned from its refusals. See [the guide's pacing chapter](crate::guide::pacing).
///
/// ```
/// use retry_runtime::{testing, Class, Policy, Retry, Upstream, UpstreamPaused};
/// use std::time::Duration;
///
/// static MODEL: Upstream = Upstream::new("model");
///
/// #[derive(Debug)]
/// enum Failed { Limited(Duration), Paused(UpstreamPaused) }
/// impl From<UpstreamPaused> for Failed {
///     fn from(paused: UpstreamPaused) -> Self { Failed::Paused(paused) }
/// }
/// impl retry_runtime::Classify for Failed {
///     fn classify(&self) -> Class {
///         match self {
///             Failed::Limited(after) => Class::RateLimited { retry_after: Some(*after) },
///             Failed::Paused(paused) => paused.classify(),
///         }
///     }
/// }
/// impl std::fmt::Display for Failed {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// static ONCE: Policy = Policy::AVAILABILITY.with_attempts(1);
/// let (outcomes, recorded) = testing::scope(async {
///     // One call is told to come back in 10 s: the upstream is paused for every call.
///     let told = Retry::new(&ONCE).upstream(&MODEL).run(async |_| {
///         Err::<u32, _>(Failed::Limited(Duration::from_secs(10)))
///     });
///     let told = told.await.is_err();
///     // Another call's first try waits for the pause (recorded, not slept, in a test).
///     let next = Retry::new(&Policy::AVAILABILITY).upstream(&MODEL).run(async |attempt| Ok::<_, Failed>(attempt));
///     (told, next.await.unwrap())
/// })
/// .await;
/// assert_eq!(outcomes, (true, 1));
/// assert_eq!(recorded.waits(), [Duration::from_secs(10)]);
/// MODEL.reset();
/// # }
/// ```
pub struct Upstream {
    name: &'static str,
    max_pause: Option<Duration>,
    gate_failures: u32,
    gate_window: Duration,
    /// What the upstream keeps at run time, in this process (a testing scope keeps its own).
    live: UpstreamLive,
    /// Where what this process learns goes further: a fleet store, while one shares the
    /// upstream. Read only when a failure or a gate's change is reported, never on an
    /// attempt's path.
    shared: Mutex<Option<Arc<dyn FleetSink>>>,
    /// Whether `shared` holds a fleet: read first, so that an upstream no fleet shares takes
    /// no lock to learn it.
    is_shared: AtomicBool,
}

/// What an upstream keeps at run time: its word (what it has to say, read on every attempt),
/// its state behind a lock, its waiters, and the fleet's retry budget in this process. One per
/// upstream in a process, and one per upstream in each testing scope, so that tests running in
/// parallel never see each other's pauses or gates.
#[derive(Debug)]
pub(crate) struct UpstreamLive {
    word: AtomicU32,
    state: Mutex<UpstreamState>,
    changed: Notify,
    /// The fleet's retry budget, in this process.
    pub(crate) lease: BudgetLease,
    pacer: Pacer,
}

impl Default for UpstreamLive {
    fn default() -> Self {
        UpstreamLive::new()
    }
}

impl UpstreamLive {
    pub(crate) const fn new() -> UpstreamLive {
        UpstreamLive {
            word: AtomicU32::new(0),
            state: Mutex::new(UpstreamState::new()),
            changed: Notify::const_new(),
            lease: BudgetLease::new(),
            pacer: Pacer::new(),
        }
    }
}

/// An upstream, as a stream across upstreams gives it to its `open`
/// ([`Retry::stream`](crate::Retry::stream) across a set): a `&'static Upstream` in a type with
/// no lifetime of its own, `Copy`, so that the stream is `Send` in a spawned task (rustc checks
/// a closure taking a `&'static` reference for every lifetime there, and fails) and an
/// `async move` block takes it along.
///
/// ```
/// use retry_runtime::{Upstream, UpstreamRef};
///
/// static CLAUDE: Upstream = Upstream::new("claude");
/// let to = UpstreamRef::new(&CLAUDE);
/// assert_eq!(to.name(), "claude"); // an `Upstream`'s methods, through `Deref`
/// assert!(std::ptr::eq(to.get(), &CLAUDE));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct UpstreamRef(&'static Upstream);

impl UpstreamRef {
    /// `upstream`, as a handle.
    pub const fn new(upstream: &'static Upstream) -> UpstreamRef {
        UpstreamRef(upstream)
    }

    /// The upstream itself.
    pub const fn get(self) -> &'static Upstream {
        self.0
    }
}

impl std::ops::Deref for UpstreamRef {
    type Target = Upstream;

    fn deref(&self) -> &Upstream {
        self.0
    }
}

/// Where an upstream tells what it learned beyond the process (a fleet store). None of it may
/// block: what it tells holds in the process already.
pub(crate) trait FleetSink: Send + Sync {
    /// `upstream` was paused for `pause` (capped at `cap`) by a hint of `class`.
    fn paused(&self, upstream: &'static str, pause: Duration, cap: Duration, class: Class);
    /// An outage failure of `class` (`Transport`, or a provider's `Unavailable` without a
    /// hint); `first_probe` is when the gate's first probe would go, were it to open now.
    fn outage(&self, upstream: &'static str, class: Class, first_probe: Duration);
    /// The gate's probe failed here; the next may go in `next`.
    fn probe_failed(&self, upstream: &'static str, next: Duration);
    /// A success or an answer closed the gate here.
    fn closed(&self, upstream: &'static str);
    /// The upstream's pacer turned on: its key's limits are to be shared among the processes.
    fn paced(&self, upstream: &'static str);
}

/// An upstream's state, behind its lock: read only when its word says there is something.
#[derive(Debug)]
struct UpstreamState {
    /// Paused until then, by a provider's hint of this class.
    paused_until: Option<(Instant, Class)>,
    /// Outage failures since the last success, and when the first of them came.
    failures: u32,
    first_failure: Option<Instant>,
    /// The gate: open in an outage, with its probe.
    gate: Gate,
    /// Bumped by a reset, so that a probe taken before it releases nothing after it.
    epoch: u32,
    /// A fleet's retry budget holds retries here (the fleet store is up).
    budgeted: bool,
    /// Its pacer holds attempts to what the key has left.
    paced: bool,
}

/// The outage gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// Closed: calls send.
    Closed,
    /// Open: the next probe may go at `next` (`failed` probes so far).
    Waiting { next: Instant, failed: u32 },
    /// Open, and one call is probing (`failed` probes before it).
    Probing { failed: u32 },
    /// Open across the fleet, and another process probes: calls wait for it to close.
    Remote,
}

impl UpstreamState {
    const fn new() -> UpstreamState {
        UpstreamState {
            paused_until: None,
            failures: 0,
            first_failure: None,
            gate: Gate::Closed,
            epoch: 0,
            budgeted: false,
            paced: false,
        }
    }

    /// What this state has to say.
    fn status(&self) -> UpstreamStatus {
        UpstreamStatus::of(
            self.paused_until.is_some(),
            self.gate != Gate::Closed,
            self.failures > 0,
            self.budgeted,
            self.paced,
        )
    }
}

/// What an upstream says of an attempt about to be made ([`Upstream::admit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Send it.
    Send {
        /// The outage gate's probe (the epoch it was taken in), which the call must report or
        /// release; `None` for any other attempt.
        probe: Option<u32>,
        /// What the upstream had to say when it was read.
        seen: UpstreamStatus,
    },
    /// Paused by a provider's hint.
    Paused {
        /// Until then.
        until: Instant,
        /// The class the hint came with, the hint included.
        class: Class,
    },
    /// The outage gate is open: wait until it closes, or until the next probe may go.
    Gated {
        /// When the next probe may go, if one is scheduled (none while a probe is out).
        next_probe: Option<Instant>,
    },
    /// The key has not what the attempt costs, as its provider last said it (or as its
    /// refusals taught): what it costs is reserved, and it goes then.
    Paced {
        /// When the key holds it.
        until: Instant,
    },
    /// The attempt costs more than the key's whole limit: it can never be sent.
    OverLimit,
}

/// What a failure tells an upstream ([`Upstream::effect_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamEffect {
    /// It pauses every call on the upstream this long.
    Pause(Duration),
    /// An outage failure: it counts toward opening the gate.
    Outage,
    /// An answer: the upstream is up; it closes an open gate.
    Clears,
    /// Nothing the upstream keeps.
    Nothing,
}

impl Upstream {
    /// An upstream named `name` (for notices, metrics and spans), with the default gate.
    pub const fn new(name: &'static str) -> Upstream {
        Upstream {
            name,
            max_pause: None,
            gate_failures: GATE_FAILURES,
            gate_window: GATE_WINDOW,
            live: UpstreamLive::new(),
            shared: Mutex::new(None),
            is_shared: AtomicBool::new(false),
        }
    }

    /// The longest a provider's hint may pause the upstream (by default, the policy's
    /// `max_retry_after` of the call that reports it).
    pub const fn max_pause(mut self, max: Duration) -> Upstream {
        self.max_pause = Some(max);
        self
    }

    /// Open the outage gate after `failures` outage failures within `within`, with no success
    /// between (default: 3 within 10 s). At least one.
    pub const fn gate_after(mut self, failures: u32, within: Duration) -> Upstream {
        self.gate_failures = if failures == 0 { 1 } else { failures };
        self.gate_window = within;
        self
    }

    /// The upstream's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// What a failure of `class` on a call under `policy` tells the upstream: the pause it sets
    /// (a provider's hint on a `RateLimited` or `Unavailable`, capped at
    /// [`max_pause`](Self::max_pause) or the policy's `max_retry_after`), whether it counts
    /// toward opening the outage gate, or whether it closes it (an answer). What
    /// `backoff explain --upstream` says, from this same code.
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Upstream, UpstreamEffect};
    /// use std::time::Duration;
    ///
    /// static KEY: Upstream = Upstream::new("key");
    /// let limited = Class::RateLimited { retry_after: Some(Duration::from_secs(30)) };
    /// assert_eq!(KEY.effect_of(limited, &Policy::AVAILABILITY), UpstreamEffect::Pause(Duration::from_secs(30)));
    /// // Capped at the policy's longest hint.
    /// let limited = Class::RateLimited { retry_after: Some(Duration::from_secs(86_400)) };
    /// let cap = Policy::AVAILABILITY.max_retry_after();
    /// assert_eq!(KEY.effect_of(limited, &Policy::AVAILABILITY), UpstreamEffect::Pause(cap));
    /// assert_eq!(KEY.effect_of(Class::Transport, &Policy::AVAILABILITY), UpstreamEffect::Outage);
    /// assert_eq!(KEY.effect_of(Class::Definitive, &Policy::AVAILABILITY), UpstreamEffect::Clears);
    /// ```
    pub fn effect_of(&self, class: Class, policy: &Policy) -> UpstreamEffect {
        if matches!(class, Class::Definitive | Class::InvalidOutput) {
            return UpstreamEffect::Clears;
        }
        let hint = class.retry_after().filter(|hint| !hint.is_zero());
        if let (Some(hint), Class::RateLimited { .. } | Class::Unavailable { .. }) = (hint, class) {
            let cap = self.max_pause.unwrap_or(policy.max_retry_after());
            return UpstreamEffect::Pause(hint.min(cap));
        }
        match class {
            // A hint of zero is no hint: the outage's own `Unavailable`.
            Class::Transport | Class::Unavailable { .. } => UpstreamEffect::Outage,
            _ => UpstreamEffect::Nothing,
        }
    }

    /// The outage gate's rule: it opens after this many outage failures within this window,
    /// with no success between.
    pub const fn gate_rule(&self) -> (u32, Duration) {
        (self.gate_failures, self.gate_window)
    }

    /// How much longer the upstream is paused by a provider's hint, if it is.
    pub fn paused_for(&self) -> Option<Duration> {
        let now = Instant::now();
        let state = self.lock();
        let (until, _) = state.paused_until?;
        (until > now).then(|| until - now)
    }

    /// Whether the outage gate is open: one call probes, the others wait.
    pub fn is_gated(&self) -> bool {
        self.status().is_gated()
    }

    /// Where what this process learns goes further, if a fleet shares the upstream; never in
    /// a testing scope, whose state is its own.
    fn sink(&self) -> Option<Arc<dyn FleetSink>> {
        if !self.is_shared.load(Ordering::Acquire) || self.scoped() {
            return None;
        }
        let shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        shared.clone()
    }

    /// What the upstream keeps at run time: the testing scope's own, in one, else the
    /// process's.
    #[inline(always)]
    pub(crate) fn live(&self) -> &UpstreamLive {
        #[cfg(feature = "test-util")]
        if let Some(live) = crate::test_scope::kept(std::ptr::from_ref(self) as usize) {
            return live;
        }
        &self.live
    }

    /// Whether a testing scope keeps this upstream's state.
    fn scoped(&self) -> bool {
        !std::ptr::eq(self.live(), &self.live)
    }

    /// When the open gate's next probe may go, if one is scheduled.
    pub(crate) fn next_probe(&self) -> Option<Instant> {
        match self.lock().gate {
            Gate::Waiting { next, .. } => Some(next),
            _ => None,
        }
    }

    /// Forget everything the upstream was told: for tests, between cases. A probe out when it
    /// is reset releases nothing after it.
    pub fn reset(&self) {
        let mut state = self.lock();
        let epoch = state.epoch.wrapping_add(1);
        let budgeted = state.budgeted;
        *state = UpstreamState::new();
        state.epoch = epoch;
        state.budgeted = budgeted;
        self.live().lease.reset();
        self.live().pacer.reset();
        self.store(&state);
        drop(state);
        self.live().changed.notify_waiters();
    }

    /// Wakes when the upstream's state changes: a pause or a gate that a waiter should read
    /// again. Made before the read that decides to wait, so no change is missed.
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.live().changed.notified()
    }

    /// What the upstream has to say now: one atomic read.
    #[inline(always)]
    pub(crate) fn status(&self) -> UpstreamStatus {
        UpstreamStatus::from_bits(self.live().word.load(Ordering::Acquire))
    }

    /// The admission of an attempt if the upstream has nothing to say (no pause, no gate),
    /// read from its word alone: no clock, no lock.
    #[inline]
    pub(crate) fn quiet(&self) -> Option<UpstreamStatus> {
        let seen = self.status();
        if seen.is_quiet() {
            return Some(seen);
        }
        self.on_credit(seen)
    }

    /// A paced upstream with nothing else to say admits an attempt at once on its pacer's
    /// credit (one atomic step, no lock, no clock), its word then saying nothing of the pacer:
    /// the send is counted, and nothing is told after.
    #[inline(never)]
    fn on_credit(&self, seen: UpstreamStatus) -> Option<UpstreamStatus> {
        (seen.is_paced_only() && self.live().pacer.take_credit()).then_some(seen.unpaced())
    }

    /// The word, if the upstream's pacer is all it has to say (no pause, no gate).
    #[inline]
    pub(crate) fn quiet_unpaced(&self) -> Option<UpstreamStatus> {
        let seen = self.status();
        seen.is_paced_only().then_some(seen)
    }

    /// [`quiet`](Self::quiet), and no fleet's retry budget to count the attempt toward: the
    /// word says at most that outage failures are being counted (`Ok`). The attribute's fast
    /// path, one test of the word; `Err`: the word, for the slow path to read.
    #[inline(always)]
    pub(crate) fn quiet_alone(&self) -> Result<UpstreamStatus, UpstreamStatus> {
        let seen = self.status();
        if seen.is_alone() {
            Ok(seen)
        } else if seen.is_paced_alone() {
            self.on_credit(seen).ok_or(seen)
        } else {
            Err(seen)
        }
    }

    fn lock(&self) -> MutexGuard<'_, UpstreamState> {
        self.live()
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn store(&self, state: &UpstreamState) {
        self.live()
            .word
            .store(state.status().bits(), Ordering::Release);
    }

    /// After a success or an answer: the failures are forgotten, and the gate closes.
    fn cleared(&self, admitted: Admission) {
        if let Admission::Send {
            probe: Some(epoch), ..
        } = admitted
            && epoch != self.lock().epoch
        {
            return;
        }
        self.close(true);
    }

    /// The failures are forgotten, and the gate closes; the fleet is told (`tell`) if it was
    /// open.
    fn close(&self, tell: bool) {
        let mut state = self.lock();
        let was_gated = state.gate != Gate::Closed;
        state.failures = 0;
        state.first_failure = None;
        state.gate = Gate::Closed;
        self.store(&state);
        drop(state);
        if was_gated {
            if tell && let Some(shared) = self.sink() {
                shared.closed(self.name);
            }
            meter::upstream(self.name, UpstreamSeries::GateClosed);
            tracing::info!(target: "retry", upstream = self.name, "{}'s outage gate closed: calls go", self.name);
            self.live().changed.notify_waiters();
        }
    }
}

pub(crate) use crate::clock::later;

/// The wait before the gate's next probe after `failed` failed probes: the policy's ladder,
/// without jitter (one call probes, so nothing to spread).
fn probe_wait(policy: &Policy, failed: u32) -> Duration {
    ladder::ideal_wait(policy, failed.saturating_add(1))
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.name)
            .field("paused", &self.status().is_paused())
            .field("gated", &self.is_gated())
            .field("paced", &self.status().is_paced())
            .finish_non_exhaustive()
    }
}

/// An upstream, or an ordered set of them, named by a type: what `#[retry]`'s expansion
/// declares for its `upstream` or `across` path, so that a call's future carries no pointer to
/// it. Not public API.
#[doc(hidden)]
pub trait Named<T: 'static> {
    /// The upstream, or the set.
    const IT: &'static T;
}
