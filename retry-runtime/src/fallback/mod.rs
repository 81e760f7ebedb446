//! Fallback: a call across an ordered set of upstreams ([`Upstreams`]). Its attempt goes to the
//! first upstream that is neither paused nor gated; a failure another upstream may not share
//! moves the call to the next at once, with no wait; the call waits only when every upstream
//! has failed in it or is held. The rules are one decision, [`Route`]'s, over what each
//! [`Upstream`] says; above admission, which it drives, and the engine, whose ladder it keeps.

mod retry;

pub use retry::AcrossRetry;

use std::fmt;

use crate::admission::{Ticket, admit};
use crate::class::{Class, ClassSet, Classify};
use crate::engine::{Count, Run, Source};
use crate::policy::Policy;
use crate::upstream::{Admission, Upstream, UpstreamPaused, UpstreamStore};
use crate::verdict::{GaveUp, LeftBecause, UpstreamLeft};

/// The most upstreams one ordered set holds: a call keeps which it tried in one word.
const MAX_UPSTREAMS: usize = 32;

/// An ordered set of upstreams for one call, in order of preference: the models, keys or hosts
/// a call may go to. Declared as a `static`, as an [`Upstream`] is, and given to a retry with
/// [`Retry::across`](crate::Retry::across) or `#[retry(across = PATH)]`.
///
/// The rules, in one place:
///
/// | when | the call |
/// |---|---|
/// | an attempt is to be made | sends to the first upstream in order that is neither paused nor gated |
/// | a failure the policy retries, or a `QuotaExhausted` ("not this key"), or a class named with [`moving`](Self::moving) | moves to the next available upstream at once, with no wait |
/// | an answer (`Definitive`) | never moves (the same request gets the same answer elsewhere) unless named with [`moving`](Self::moving) |
/// | every upstream failed in this call, or is paused or gated | waits: its ladder's wait, then for the upstream that frees soonest; then starts again from the first |
/// | a preferred upstream's gate is open | one call per rung of its probe ladder tries it first, and on failure moves on at once |
/// | a stream failed after its commit point | stays on the upstream that delivered (committed, resumed, restarted) |
///
/// Every attempt counts: the whole call keeps to its policy's attempts and waits, its quota
/// (a move pays as a retry does) and its turn. The outcome ([`Answered`]) names the upstream
/// that answered; a give-up keeps each upstream's last failure ([`GaveUp::upstreams`]).
///
/// ```
/// use retry_runtime::{Class, Policy, Retry, Upstream, Upstreams};
///
/// static CLAUDE: Upstream = Upstream::new("claude");
/// static GPT: Upstream = Upstream::new("gpt");
/// static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// // claude is overloaded: the call moves to gpt at once, with no wait.
/// let answered = Retry::new(&Policy::AVAILABILITY)
///     .across(&MODELS)
///     .run(async |to| match to.name() {
///         "claude" => Err(Class::Unavailable { retry_after: None }),
///         model => Ok(format!("answered by {model}")),
///     })
///     .await
///     .unwrap();
/// assert_eq!(answered.upstream().name(), "gpt");
/// assert_eq!(answered.value(), "answered by gpt");
/// # CLAUDE.reset();
/// # }
/// ```
#[derive(Debug)]
pub struct Upstreams {
    upstreams: &'static [&'static Upstream],
    also: ClassSet,
}

impl Upstreams {
    /// The set, in order of preference.
    ///
    /// # Panics
    ///
    /// If `upstreams` is empty or holds more than 32: in a `static`, a compile error.
    pub const fn new(upstreams: &'static [&'static Upstream]) -> Upstreams {
        assert!(
            !upstreams.is_empty() && upstreams.len() <= MAX_UPSTREAMS,
            "an ordered set of upstreams holds from 1 to 32 upstreams"
        );
        Upstreams {
            upstreams,
            also: ClassSet::EMPTY,
        }
    }

    /// Also move to the next upstream on a failure of `class`, which the policy would not
    /// retry: a context overflow (an answer, `Definitive`, from one model) to a model with a
    /// larger window.
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Upstream, Upstreams};
    ///
    /// static SMALL: Upstream = Upstream::new("small");
    /// static LARGE: Upstream = Upstream::new("large");
    /// static WINDOWS: Upstreams = Upstreams::new(&[&SMALL, &LARGE]).moving(Class::Definitive);
    /// assert!(WINDOWS.moves(Class::Definitive, &Policy::AVAILABILITY));
    /// ```
    pub const fn moving(mut self, class: Class) -> Upstreams {
        self.also = self.also.with(class);
        self
    }

    /// The upstreams, in order of preference.
    pub const fn upstreams(&self) -> &'static [&'static Upstream] {
        self.upstreams
    }

    /// Whether a failure of `class`, on a call under `policy`, moves the call to the next
    /// upstream: one the policy retries, a `QuotaExhausted` ("not this key"), or one named
    /// with [`moving`](Self::moving); never an answer (`Definitive`) unless named. What
    /// `backoff explain --across` says, from this same code.
    ///
    /// ```
    /// use retry_runtime::{Class, Policy, Upstream, Upstreams};
    ///
    /// static A: Upstream = Upstream::new("a");
    /// static B: Upstream = Upstream::new("b");
    /// static BOTH: Upstreams = Upstreams::new(&[&A, &B]);
    /// let policy = &Policy::AVAILABILITY;
    /// assert!(BOTH.moves(Class::Unavailable { retry_after: None }, policy));
    /// assert!(BOTH.moves(Class::QuotaExhausted, policy));
    /// assert!(!BOTH.moves(Class::Definitive, policy));
    /// ```
    pub const fn moves(&self, class: Class, policy: &Policy) -> bool {
        if self.also.contains(&class) {
            return true;
        }
        match class {
            Class::Definitive | Class::Cancelled => false,
            Class::QuotaExhausted => true,
            _ => policy.retries(&class),
        }
    }

    /// Where the next attempt of a call that has tried none of them would go now, without
    /// taking anything from the upstreams (no probe): the first that is neither paused nor
    /// gated, or `None` if every one is held.
    ///
    /// ```
    /// use retry_runtime::{Upstream, Upstreams};
    ///
    /// static A: Upstream = Upstream::new("a");
    /// static B: Upstream = Upstream::new("b");
    /// static BOTH: Upstreams = Upstreams::new(&[&A, &B]);
    /// assert_eq!(BOTH.first_available().map(Upstream::name), Some("a"));
    /// ```
    pub fn first_available(&self) -> Option<&'static Upstream> {
        self.upstreams
            .iter()
            .copied()
            .find(|upstream| upstream.paused_for().is_none() && !upstream.is_gated())
    }
}

/// What a call across an ordered set of upstreams returns: the value, and the upstream that
/// answered.
#[derive(Debug, Clone, Copy)]
pub struct Answered<T> {
    value: T,
    upstream: &'static Upstream,
}

impl<T> Answered<T> {
    pub(crate) fn new(value: T, upstream: &'static Upstream) -> Answered<T> {
        Answered { value, upstream }
    }

    /// The upstream that answered.
    pub fn upstream(&self) -> &'static Upstream {
        self.upstream
    }

    /// The value.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The value, without the upstream.
    pub fn into_value(self) -> T {
        self.value
    }
}

/// One call's way through its ordered set: which upstreams failed in this round, where the
/// next attempt goes, and, once anything failed or was held, how it left each. The one
/// decision of fallback. Used by `#[retry(across = ..)]`'s expansion, not public API.
#[doc(hidden)]
pub struct Route {
    set: &'static Upstreams,
    /// Bit `i`: the `i`th upstream failed in this round.
    tried: u32,
    /// The upstream of the attempt in progress.
    at: usize,
    /// The next attempt's ticket, taken when a move chose its upstream.
    next: Option<Ticket>,
    /// How the call left each upstream it failed on or passed over; empty (unallocated) until
    /// one is.
    left: Vec<UpstreamLeft>,
}

/// What follows a failed attempt on a route.
#[doc(hidden)]
pub enum Next<E> {
    /// Moved to the next upstream: make the attempt.
    Moved,
    /// No other upstream is available: the ladder decides (its wait, or its give-up).
    Ladder(E),
    /// The call gave up.
    GaveUp(GaveUp<E>),
}

impl Route {
    /// A call's route through `set`, nothing tried.
    #[inline]
    pub fn new(set: &'static Upstreams) -> Route {
        Route {
            set,
            tried: 0,
            at: 0,
            next: None,
            left: Vec::new(),
        }
    }

    /// The next attempt's ticket at once: the one a move took, or the first upstream not
    /// failed in this round if it has nothing to say (one atomic read). `None`: ask
    /// [`admit`](Self::admit).
    #[inline]
    pub fn at_once(&mut self) -> Option<Ticket> {
        if let Some(ticket) = self.next.take() {
            return Some(ticket);
        }
        let at = (!self.tried).trailing_zeros() as usize;
        let upstream = *self.set.upstreams.get(at)?;
        let ticket = Ticket::at_once(upstream)?;
        self.at = at;
        Some(ticket)
    }

    /// The upstream of the attempt in progress.
    #[inline]
    pub fn upstream(&self) -> &'static Upstream {
        self.set.upstreams[self.at]
    }

    /// The first upstream not failed in this round that admits an attempt at `now` (a probe
    /// of an open gate included, which the call then makes), passing over the held ones.
    pub(crate) fn pick(&mut self, now: tokio::time::Instant) -> Option<Ticket> {
        for (at, upstream) in self.set.upstreams.iter().copied().enumerate() {
            if self.tried & (1 << at) != 0 {
                continue;
            }
            match upstream.admit(now) {
                admission @ Admission::Send { .. } => {
                    self.at = at;
                    return Some(Ticket::new(upstream, admission));
                }
                Admission::Paused { .. } => self.passed(upstream, LeftBecause::Paused),
                Admission::Gated { .. } => self.passed(upstream, LeftBecause::Gated),
            }
        }
        None
    }

    /// The upstream that frees soonest by what it said at `now` (a pause's end, a gate's next
    /// probe; a gate with its probe out, last), among those not failed in this round.
    pub(crate) fn soonest(&self, now: tokio::time::Instant) -> &'static Upstream {
        let ends = |upstream: &&'static Upstream| {
            let paused = upstream.paused_for().map(|left| now + left);
            paused
                .or_else(|| upstream.next_probe())
                .unwrap_or(now + Policy::MAX_TOTAL_WAIT)
        };
        self.set
            .upstreams
            .iter()
            .enumerate()
            .filter(|(at, _)| self.tried & (1 << at) == 0)
            .map(|(_, upstream)| *upstream)
            .min_by_key(ends)
            .unwrap_or(self.set.upstreams[0])
    }

    /// The next attempt's ticket, once an upstream admits it: the first available, or, with
    /// every upstream held, after the wait for the one that frees soonest; or the give-up,
    /// the caller's error made by `hold`, where that wait would outlast the call.
    pub async fn admit<R, A, E>(
        &mut self,
        run: &mut Run<R, A>,
        hold: fn(UpstreamPaused) -> E,
    ) -> Result<Ticket, GaveUp<E>>
    where
        R: Source,
        A: Count,
        E: Classify + fmt::Display,
    {
        let now = run.clock_now();
        if let Some(ticket) = self.pick(now) {
            return Ok(ticket);
        }
        let soonest = self.soonest(now);
        match admit(run, soonest, hold).await {
            Ok(ticket) => {
                self.admitted(soonest);
                Ok(ticket)
            }
            Err(gave_up) => Err(self.gave_up(gave_up, false)),
        }
    }

    /// The next attempt goes to `upstream`, which admitted it after a wait.
    pub(crate) fn admitted(&mut self, upstream: &'static Upstream) {
        let mut upstreams = self.set.upstreams.iter();
        self.at = upstreams
            .position(|each| std::ptr::eq(*each, upstream))
            .unwrap_or(0);
    }

    /// The next attempt's ticket without a wait, if an upstream admits it at `now`.
    #[cfg_attr(
        not(any(feature = "tower", feature = "reqwest-middleware", feature = "stream")),
        allow(dead_code)
    )]
    pub(crate) fn ready(&mut self, now: tokio::time::Instant) -> Option<Ticket> {
        self.at_once().or_else(|| self.pick(now))
    }

    /// The attempt `ticket` admitted failed with `error`: the upstream is told; the call moves
    /// to the next available upstream at once where the failure moves it, or leaves the wait
    /// (or the give-up) to its ladder.
    pub fn failed<R, A, E>(&mut self, ticket: Ticket, run: &mut Run<R, A>, error: E) -> Next<E>
    where
        R: Source,
        A: Count,
        E: Classify + fmt::Display,
    {
        let class = error.classify();
        ticket.failed(class, run);
        let from = self.upstream();
        self.tried |= 1 << self.at;
        self.note(from, LeftBecause::Waited, Some((class, &error)));
        if !self.set.moves(class, run.policy()) {
            return Next::Ladder(error);
        }
        let Some(next) = self.pick(run.clock_now()) else {
            return Next::Ladder(error);
        };
        let to = next.upstream();
        self.note(from, LeftBecause::Moved, None);
        match run.move_on(error, class, from.name(), to.name()) {
            Ok(()) => {
                self.next = Some(next);
                Next::Moved
            }
            // The ticket taken for the move is dropped: a probe it held is freed.
            Err(gave_up) => {
                self.note(from, LeftBecause::GaveUp, None);
                Next::GaveUp(gave_up)
            }
        }
    }

    /// The ladder's wait is over: a new round, from the first upstream.
    #[inline]
    pub fn waited(&mut self) {
        self.tried = 0;
    }

    /// The call gives up with `gave_up`: it carries how the call left each upstream, the last
    /// one's failure (`failed`: the failure given up on) marked so.
    pub fn gave_up<E>(&mut self, gave_up: GaveUp<E>, failed: bool) -> GaveUp<E> {
        if failed {
            self.note(self.upstream(), LeftBecause::GaveUp, None);
        }
        let order = |left: &UpstreamLeft| {
            let position = self.set.upstreams.iter();
            position
                .map(|u| u.name())
                .position(|name| name == left.upstream())
        };
        let mut left = std::mem::take(&mut self.left);
        left.sort_by_key(order);
        gave_up.with_upstreams(left)
    }

    /// A held upstream passed over.
    #[cold]
    fn passed(&mut self, upstream: &'static Upstream, why: LeftBecause) {
        self.note(upstream, why, None);
    }

    /// Note how the call left `upstream`: `why`, and its `failure` if it failed.
    fn note(
        &mut self,
        upstream: &'static Upstream,
        why: LeftBecause,
        failure: Option<(Class, &dyn fmt::Display)>,
    ) {
        let name = upstream.name();
        let at = match self.left.iter().position(|left| left.upstream() == name) {
            Some(at) => at,
            None => {
                self.left.push(UpstreamLeft::new(name, why));
                self.left.len() - 1
            }
        };
        let mut left = self.left[at].clone().because(why);
        if let Some((class, error)) = failure {
            left = left.failed(class, error);
        }
        self.left[at] = left;
    }
}

impl fmt::Debug for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Route")
            .field("upstream", &self.upstream().name())
            .field("tried", &self.tried)
            .finish_non_exhaustive()
    }
}
