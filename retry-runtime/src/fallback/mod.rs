//! Fallback: a call across an ordered set of upstreams ([`Upstreams`]). Its attempt goes to the
//! first upstream that is neither paused nor gated; a failure another upstream may not share
//! moves the call to the next at once, with no wait; the call waits only when every upstream
//! has failed in it or is held. The rules are one decision, [`Route`]'s, over what each
//! [`Upstream`] says; above admission, which it drives, and the engine, whose ladder it keeps.

use std::fmt;
use std::marker::PhantomData;

use crate::admission::{AdmissionWord, Admitted, Admitting, Ticket};
use crate::class::{Class, ClassSet, Classify};
use crate::engine::{Call, Count, Held, Run, Source};
use crate::policy::Policy;
use crate::upstream::{Admission, Named, Upstream, UpstreamPaused};
use crate::verdict::{GaveUp, LeftBecause, UpstreamLeft};
use tokio::time::Instant;

/// The most upstreams one ordered set holds: a call keeps which it tried in one word.
const MAX_UPSTREAMS: usize = 32;

/// An ordered set of upstreams for one call, in order of preference: the models, keys or hosts
/// a call may go to. Declared as a `static`, as an [`Upstream`] is, and given to a retry with
/// [`Retry::across`](crate::Retry::across) or `#[retry(across = PATH)]`.
///
/// The rules are written once, in [the guide's fallback chapter](crate::guide::fallback): an
/// attempt goes to the first upstream neither paused nor gated; a failure another upstream
/// may not share moves the call at once; an answer never moves unless named with
/// [`moving`](Self::moving); a stream that has delivered stays where it delivered.
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
/// decision of fallback. The set is given to each step, not kept, so that a call's future
/// carries no pointer to it where the set is named by a type ([`Routed`]). Not public API.
#[doc(hidden)]
#[derive(Default)]
pub(crate) struct Route {
    /// Bit `i`: the `i`th upstream failed in this round.
    tried: u32,
    /// The upstream of the attempt in progress.
    at: u8,
    /// A move took the next attempt's admission: its word is in `next`.
    moved: bool,
    /// The call gives up with a report of how it left each upstream (a `GaveUp`), so it
    /// notes that as it goes; the attribute and the layers give the caller its error alone,
    /// and note nothing.
    reports: bool,
    /// The admission a move took for the next attempt: a plain value, as nothing is awaited
    /// between the move and that attempt.
    next: AdmissionWord,
    /// How the call left each upstream it failed on or passed over: made at the first.
    left: Option<Box<Lefts>>,
}

/// How a call left each upstream, in the order it first did.
#[derive(Default)]
struct Lefts(Vec<UpstreamLeft>);

/// What follows a failed attempt: a move, or the ladder's turn (or a give-up). Not public API.
#[doc(hidden)]
pub enum Next<E> {
    /// Moved to the next upstream: make the attempt.
    Moved,
    /// No other upstream is available: the ladder decides (its wait, or its give-up), on the
    /// failure's class, classified once.
    Ladder(E, Class),
    /// The call gave up.
    GaveUp(GaveUp<E>),
}

impl Route {
    /// A call's route, nothing tried, for a call that gives up with a report of how it left
    /// each upstream.
    #[inline]
    pub(crate) const fn new() -> Route {
        Route::reporting(true)
    }

    const fn reporting(reports: bool) -> Route {
        Route {
            tried: 0,
            at: 0,
            moved: false,
            reports,
            next: AdmissionWord::NOTHING,
            left: None,
        }
    }

    /// A call's route, nothing tried, for a call whose give-up nobody reads a report of: it
    /// notes nothing as it goes.
    #[inline]
    pub(crate) const fn silent() -> Route {
        Route::reporting(false)
    }

    /// The next attempt's ticket at once: the one a move took, or the first upstream of `set`
    /// not failed in this round if it has nothing to say (one atomic read). `None`: ask
    /// [`admit`](Self::admit).
    #[inline]
    pub(crate) fn at_once(&mut self, set: &'static Upstreams) -> Option<Ticket> {
        // A first try, or one after a wait: the set's first upstream, one atomic read
        // (nothing failed in this round, so no move is pending either).
        if self.tried == 0 {
            debug_assert!(!self.moved, "a move follows a failure in its round");
            self.at = 0;
            return Ticket::at_once(set.upstreams[0]);
        }
        self.after_failure(set)
    }

    /// [`at_once`](Self::at_once) after a failure in this round: the ticket a move took, or
    /// the first upstream not failed in it, if it has nothing to say.
    #[cold]
    fn after_failure(&mut self, set: &'static Upstreams) -> Option<Ticket> {
        if self.moved {
            self.moved = false;
            let upstream = self.upstream(set);
            let next = std::mem::take(&mut self.next);
            return Some(Admitted::kept(upstream, next).take_ticket());
        }
        let at = (!self.tried).trailing_zeros();
        let upstream = *set.upstreams.get(at as usize)?;
        let ticket = Ticket::at_once(upstream)?;
        // At most 32 upstreams: `at` fits.
        self.at = at as u8;
        Some(ticket)
    }

    /// The upstream of the attempt in progress.
    #[inline]
    pub(crate) fn upstream(&self, set: &'static Upstreams) -> &'static Upstream {
        set.upstreams[usize::from(self.at)]
    }

    /// The first upstream of `set` not failed in this round that admits an attempt at `now`
    /// (a probe of an open gate included, which the call then makes), passing over the held
    /// ones.
    pub(crate) fn pick(&mut self, set: &'static Upstreams, now: Instant) -> Option<Ticket> {
        for (at, upstream) in set.upstreams.iter().copied().enumerate() {
            if self.tried & (1 << at) != 0 {
                continue;
            }
            match upstream.admit(now) {
                admission @ Admission::Send { .. } => {
                    self.at = at as u8;
                    return Some(Ticket::new(upstream, admission));
                }
                // A paced key, asked without a reservation, is passed over as a paused one.
                Admission::Paused { .. } | Admission::Paced { .. } | Admission::OverLimit => {
                    self.passed(upstream, LeftBecause::Paused);
                }
                Admission::Gated { .. } => self.passed(upstream, LeftBecause::Gated),
            }
        }
        None
    }

    /// The upstream of `set` that frees soonest by what it said at `now` (a pause's end, a
    /// gate's next probe; a gate with its probe out, last), among those not failed in this
    /// round.
    pub(crate) fn soonest(&self, set: &'static Upstreams, now: Instant) -> &'static Upstream {
        let ends = |upstream: &&'static Upstream| {
            let paused = upstream.paused_for().map(|left| now + left);
            let far = now + Policy::MAX_TOTAL_WAIT;
            paused.or_else(|| upstream.next_probe()).unwrap_or(far)
        };
        set.upstreams
            .iter()
            .enumerate()
            .filter(|(at, _)| self.tried & (1 << at) == 0)
            .map(|(_, upstream)| *upstream)
            .min_by_key(ends)
            .unwrap_or(set.upstreams[0])
    }

    /// The next attempt's ticket, once an upstream of `set` admits it: the first available,
    /// or, with every upstream held, after the wait for the one that frees soonest; or the
    /// give-up, the caller's error made by `hold`, where that wait would outlast the call.
    pub(crate) async fn admit<R, A, E>(
        &mut self,
        set: &'static Upstreams,
        run: &mut Run<R, A>,
        hold: fn(UpstreamPaused) -> E,
    ) -> Result<Ticket, GaveUp<E>>
    where
        R: Source,
        A: Count,
        E: Classify + fmt::Display,
    {
        let now = run.clock_now();
        if let Some(ticket) = self.pick(set, now) {
            return Ok(ticket);
        }
        let mut admitting = Box::pin(self.waiting(set, now));
        let admitted = std::future::poll_fn(|cx| admitting.as_mut().poll_admit(run, cx, hold));
        match admitted.await {
            Ok(ticket) => {
                self.admitted(set, ticket.upstream());
                Ok(ticket)
            }
            Err(gave_up) => Err(self.gave_up(set, gave_up, false)),
        }
    }

    /// The wait of a call across `set` with every upstream not failed in this round held:
    /// for the one that frees soonest by what it said at `now`, or any of them that admits
    /// the attempt before (a preferred one reopening first).
    pub(crate) fn waiting<S: std::future::Future<Output = ()>>(
        &self,
        set: &'static Upstreams,
        now: Instant,
    ) -> Admitting<S> {
        Admitting::across(set.upstreams, self.tried, self.soonest(set, now))
    }

    /// The next attempt goes to `upstream`, which admitted it after a wait.
    pub(crate) fn admitted(&mut self, set: &'static Upstreams, upstream: &'static Upstream) {
        let mut upstreams = set.upstreams.iter();
        let at = upstreams.position(|each| std::ptr::eq(*each, upstream));
        self.at = at.unwrap_or(0) as u8;
    }

    /// The next attempt's ticket without a wait, if an upstream of `set` admits it at `now`.
    #[cfg_attr(
        not(any(feature = "tower", feature = "reqwest-middleware", feature = "stream")),
        allow(dead_code)
    )]
    pub(crate) fn ready(&mut self, set: &'static Upstreams, now: Instant) -> Option<Ticket> {
        self.at_once(set).or_else(|| self.pick(set, now))
    }

    /// The attempt `ticket` admitted failed with `error`, of `class`: the upstream is told;
    /// the call moves to the next available upstream of `set` at once where the failure moves
    /// it, or leaves the wait (or the give-up) to its ladder.
    pub(crate) fn failed_as<R, A, E>(
        &mut self,
        set: &'static Upstreams,
        ticket: Ticket,
        run: &mut Run<R, A>,
        error: E,
        class: Class,
    ) -> Next<E>
    where
        R: Source,
        A: Count,
        E: Classify + fmt::Display,
    {
        ticket.failed(class, run);
        let from = self.upstream(set);
        self.tried |= 1 << self.at;
        self.note(from, LeftBecause::Waited, Some((class, &error)));
        if !set.moves(class, run.policy()) {
            return Next::Ladder(error, class);
        }
        let from_at = self.at;
        let Some(next) = self.pick(set, run.clock_now()) else {
            return Next::Ladder(error, class);
        };
        let to = next.upstream();
        self.note(from, LeftBecause::Moved, None);
        match run.move_on(error, class, from.name(), to.name()) {
            Ok(()) => {
                self.next = next.into_word();
                self.moved = true;
                Next::Moved
            }
            // The ticket taken for the move is dropped: a probe it held is freed. The call
            // stays on the upstream it gave up on, which the report names; the one it would
            // have moved to was never tried.
            Err(gave_up) => {
                self.at = from_at;
                self.note(from, LeftBecause::GaveUp, None);
                Next::GaveUp(gave_up)
            }
        }
    }

    /// A stream that delivered on the upstream of its attempt failed there with `class` and
    /// stays (a stream never moves once it has delivered): the failure is noted, for the
    /// report of a give-up.
    #[cfg_attr(not(feature = "stream"), allow(dead_code))]
    pub(crate) fn stayed(
        &mut self,
        set: &'static Upstreams,
        class: Class,
        error: &dyn fmt::Display,
    ) {
        self.note(
            self.upstream(set),
            LeftBecause::Waited,
            Some((class, error)),
        );
    }

    /// The ladder's wait is over: a new round, from the first upstream.
    #[inline]
    pub(crate) fn waited(&mut self) {
        self.tried = 0;
    }

    /// The call gives up with `gave_up`: it carries how the call left each upstream of `set`,
    /// the last one's failure (`failed`: the failure given up on) marked so.
    pub(crate) fn gave_up<E>(
        &mut self,
        set: &'static Upstreams,
        gave_up: GaveUp<E>,
        failed: bool,
    ) -> GaveUp<E> {
        if failed {
            self.note(self.upstream(set), LeftBecause::GaveUp, None);
        }
        let order = |left: &UpstreamLeft| {
            let names = set.upstreams.iter().map(|upstream| upstream.name());
            names.clone().position(|name| name == left.upstream())
        };
        let mut left = self.left.take().map(|left| left.0).unwrap_or_default();
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
        if !self.reports {
            return;
        }
        let name = upstream.name();
        let lefts = &mut self.left.get_or_insert_with(Box::default).0;
        let at = match lefts.iter().position(|left| left.upstream() == name) {
            Some(at) => at,
            None => {
                lefts.push(UpstreamLeft::new(name, why));
                lefts.len() - 1
            }
        };
        let left = &mut lefts[at];
        left.because(why);
        if let Some((class, error)) = failure {
            left.failed(class, error);
        }
    }
}

/// How a [`Routed`] finds its set: by a type that names it (`PhantomData<S>`, no bytes), or
/// by a pointer, where the path names what only the function's body can (`Self::MODELS`,
/// `T::MODELS`), which an item of the expansion cannot. Not public API.
#[doc(hidden)]
pub trait UpstreamsKept {
    /// The set.
    fn set(&self) -> &'static Upstreams;
}

impl<S: Named<Upstreams>> UpstreamsKept for PhantomData<S> {
    #[inline(always)]
    fn set(&self) -> &'static Upstreams {
        S::IT
    }
}

impl UpstreamsKept for &'static Upstreams {
    #[inline(always)]
    fn set(&self) -> &'static Upstreams {
        self
    }
}

/// A call's [`Route`] across the set `K` keeps, and the admission of its attempt in progress
/// (on the route's upstream): kept in the call's [`Call`] by `#[retry(across = ..)]`'s
/// expansion, whose drop frees a probe the attempt was admitted as. Not public API.
#[doc(hidden)]
pub struct Routed<K> {
    route: Route,
    /// The admission of the attempt in progress, on the route's upstream.
    word: AdmissionWord,
    set: K,
}

impl<S: Named<Upstreams>> Routed<PhantomData<S>> {
    /// A call across the set `S` names, nothing tried.
    #[inline]
    pub const fn named() -> Self {
        Routed::kept(PhantomData)
    }
}

impl Routed<&'static Upstreams> {
    /// A call across `set`, nothing tried.
    #[inline]
    pub const fn at(set: &'static Upstreams) -> Self {
        Routed::kept(set)
    }

    /// A call across `set`, nothing tried, that gives up with a report of how it left each
    /// upstream ([`GaveUp::upstreams`]).
    #[inline]
    pub(crate) const fn reporting(set: &'static Upstreams) -> Self {
        Routed {
            route: Route::new(),
            word: AdmissionWord::NOTHING,
            set,
        }
    }
}

impl<K: UpstreamsKept> Routed<K> {
    const fn kept(set: K) -> Self {
        Routed {
            // The attribute's call gives the caller its error alone.
            route: Route::silent(),
            word: AdmissionWord::NOTHING,
            set,
        }
    }

    /// `step` on the route and the admission, on the route's upstream.
    #[inline(always)]
    fn step<T>(&mut self, step: impl FnOnce(&mut Route, &mut Admitted) -> T) -> T {
        let upstream = self.route.upstream(self.set.set());
        let mut admitted = Admitted::kept(upstream, self.word);
        let stepped = step(&mut self.route, &mut admitted);
        self.word = admitted.word();
        stepped
    }
}

impl<K: UpstreamsKept> Held for Routed<K> {
    #[inline]
    fn let_go(&mut self) {
        if self.word.probing() {
            self.step(|_, admitted| admitted.let_go());
        }
    }
}

impl<K: UpstreamsKept> Routed<K> {
    /// The upstream of the attempt in progress.
    #[inline(always)]
    pub(crate) fn upstream(&self) -> &'static Upstream {
        self.route.upstream(self.set.set())
    }

    /// [`at_once`] after a failure in this round.
    #[cold]
    #[inline(never)]
    fn moved_or_next(&mut self) -> bool {
        let Some(ticket) = self.route.after_failure(self.set.set()) else {
            return false;
        };
        let admitted = ticket.into_admitted();
        self.step(|_, kept| *kept = admitted);
        true
    }

    /// The attempt succeeded: its upstream is told, where it has anything to hear.
    #[inline(always)]
    pub(crate) fn succeeded(&mut self) {
        if self.word.to_tell() {
            self.step(|_, admitted| admitted.succeeded());
        }
    }

    /// The ladder's wait is over: a new round, from the first upstream.
    #[inline(always)]
    pub(crate) fn waited(&mut self) {
        self.route.waited();
    }

    /// The call gives up with `gave_up`: with how it left each upstream, where it keeps that.
    #[inline]
    pub(crate) fn gave_up<E>(&mut self, gave_up: GaveUp<E>, failed: bool) -> GaveUp<E> {
        self.route.gave_up(self.set.set(), gave_up, failed)
    }
}

/// The fast path of a call across a set: the next attempt admitted at once by the admission a
/// move took, or by the first upstream of the set not failed in this round if it has nothing
/// to say (one atomic read). `false`: ask [`admit_routed`].
#[inline(always)]
pub(crate) fn at_once<R: Source, K: UpstreamsKept>(call: &mut Call<R, Routed<K>>) -> bool {
    let routed = call.parts().1;
    // A first try, or one after a wait: the set's first upstream (nothing failed in this
    // round, so no move is pending either).
    if routed.route.tried == 0 {
        debug_assert!(!routed.route.moved, "a move follows a failure in its round");
        let first = routed.set.set().upstreams[0];
        let Some(seen) = first.quiet() else {
            return false;
        };
        routed.route.at = 0;
        routed.word = AdmissionWord::seen(seen);
        return true;
    }
    routed.moved_or_next()
}

/// [`Route::admit`] on the call's own route: the admission of the upstream the next attempt
/// goes to, which the call keeps; or the give-up.
pub(crate) async fn admit_routed<R, K, E>(
    call: &mut Call<R, Routed<K>>,
    hold: fn(UpstreamPaused) -> E,
) -> Result<(), GaveUp<E>>
where
    R: Source,
    K: UpstreamsKept,
    E: Classify + fmt::Display,
{
    let (run, routed) = call.parts();
    let ticket = routed.route.admit(routed.set.set(), run, hold).await?;
    let admitted = ticket.into_admitted();
    routed.step(|_, kept| *kept = admitted);
    Ok(())
}

/// [`Route::failed_as`] on the call's own route and admission.
pub(crate) fn routed_failed<R, K, E>(
    call: &mut Call<R, Routed<K>>,
    error: E,
    class: Class,
) -> Next<E>
where
    R: Source,
    K: UpstreamsKept,
    E: Classify + fmt::Display,
{
    let (run, routed) = call.parts();
    let ticket = routed.step(|_, admitted| admitted.take_ticket());
    routed
        .route
        .failed_as(routed.set.set(), ticket, run, error, class)
}

impl fmt::Debug for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Route")
            .field("at", &self.at)
            .field("tried", &self.tried)
            .finish_non_exhaustive()
    }
}
