//! Admission: before each attempt of a call on an [`Upstream`], what the upstream says
//! ([`admit`]), the wait for its pause or gate, and the [`Ticket`] that tells the upstream how
//! the attempt ended. What a call on one upstream keeps of its admission ([`Admitted`],
//! [`AdmittedOn`]), whose steps are [`route`](crate::route)'s. Above the engine and the
//! upstream's state, which know nothing of it.

mod wait;

pub(crate) use wait::{Admitting, admit};

use std::marker::PhantomData;

use crate::class::Class;
use crate::engine::{Call, Held, Run, Source};
use crate::upstream::{Admission, Named, Upstream, UpstreamPaused, UpstreamStatus};

/// An attempt the upstream admitted, as plain values: the upstream, and what it said when it
/// admitted the attempt (a probe's epoch, its word). It tells the upstream how the attempt
/// ended. It has no drop of its own: a [`Ticket`] frees a probe that ends with no outcome when
/// it is dropped, and a call's [`Call`](crate::engine::Call) when the call is (what
/// `Retry::upstream`'s run keeps there, and the attribute's expansion where its upstream's
/// path names the function's context, such as `Self::MODEL`). Not public API.
#[doc(hidden)]
#[derive(Debug)]
pub struct Admitted {
    upstream: &'static Upstream,
    /// What the upstream said when it admitted the attempt: two words in all, so a call's
    /// future carries little.
    word: AdmissionWord,
}

/// What a call keeps of an admission between its steps, one word whose bits are this type's
/// alone: a probe's epoch (the high half), whether the admission is the gate's probe not yet
/// told how it ended, and what the upstream said when it admitted the attempt (its word, but
/// for the budget's bit: a budget is nothing to clear after a success). A call on an upstream
/// keeps one; a call across a set one for its attempt, and one a move took for the next. Not
/// public API.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdmissionWord(u64);

impl AdmissionWord {
    /// The admission is the gate's probe, not yet told how it ended.
    const PROBE: u64 = 1 << 8;
    /// The upstream's status, as it was read, but for the budget ([`UpstreamStatus::kept`]).
    const SEEN: u64 = Self::PROBE - 1;
    /// Nothing to tell, nothing to free.
    pub(crate) const NOTHING: AdmissionWord = AdmissionWord(0);

    /// The admission of an attempt a quiet upstream let through, having read `seen`.
    #[inline(always)]
    pub(crate) const fn seen(seen: UpstreamStatus) -> AdmissionWord {
        AdmissionWord(seen.kept(Self::PROBE))
    }

    /// What `admission` keeps: a send's probe and word; anything else, nothing.
    fn of(admission: Admission) -> AdmissionWord {
        match admission {
            Admission::Send { probe, seen } => {
                let probe = probe.map_or(0, |epoch| (u64::from(epoch) << 32) | Self::PROBE);
                AdmissionWord(probe | AdmissionWord::seen(seen).0)
            }
            _ => AdmissionWord::NOTHING,
        }
    }

    /// Whether it is a probe not yet told how it ended.
    #[inline(always)]
    pub(crate) const fn probing(self) -> bool {
        self.0 & Self::PROBE != 0
    }

    /// Whether it has a success to tell its upstream: the upstream said something when it
    /// admitted the attempt, or it was a probe.
    #[inline(always)]
    pub(crate) const fn to_tell(self) -> bool {
        self.0 & (Self::SEEN | Self::PROBE) != 0
    }

    /// The admission, as the upstream reads it back.
    fn admission(self) -> Admission {
        Admission::Send {
            probe: self.probing().then_some((self.0 >> 32) as u32),
            seen: UpstreamStatus::from_bits((self.0 & Self::SEEN) as u32),
        }
    }
}

impl Admitted {
    /// An admission on `upstream` with nothing to tell: what a call keeps before its first.
    #[inline]
    pub const fn idle(upstream: &'static Upstream) -> Admitted {
        Admitted {
            upstream,
            word: AdmissionWord::NOTHING,
        }
    }

    /// The admission on `upstream` of what a call kept of it.
    #[inline(always)]
    pub(crate) const fn kept(upstream: &'static Upstream, word: AdmissionWord) -> Admitted {
        Admitted { upstream, word }
    }

    /// What a call keeps of it beside its upstream.
    #[inline(always)]
    pub(crate) const fn word(&self) -> AdmissionWord {
        self.word
    }

    /// The admission, as the upstream reads it back; from now on, nothing to free.
    fn take(&mut self) -> Admission {
        std::mem::take(&mut self.word).admission()
    }

    /// The admission as a ticket, which frees a probe if it is dropped; the call keeps
    /// nothing to free.
    pub(crate) fn take_ticket(&mut self) -> Ticket {
        Ticket(Admitted::kept(
            self.upstream,
            std::mem::take(&mut self.word),
        ))
    }

    /// Admit a call's own attempt (not a move across upstreams) on the same upstream at once,
    /// if it has nothing to say: the fast path, one atomic read. A first try counts as a request
    /// toward a fleet's retry budget, and a `retry` takes one of its tokens; `false`: ask
    /// [`admit`].
    #[inline]
    pub(crate) fn at_once_for(&mut self, retry: bool) -> bool {
        let word = self.upstream.quiet_alone();
        self.admit_word(word, retry)
    }

    /// Admit a call's own attempt by the upstream's `word` as
    /// [`Upstream::quiet_alone`] read it.
    #[inline(always)]
    fn admit_word(&mut self, word: Result<UpstreamStatus, UpstreamStatus>, retry: bool) -> bool {
        match word {
            // Nothing but outage failures counted, which the admission keeps.
            Ok(seen) => {
                self.word = AdmissionWord::seen(seen);
                true
            }
            // Quiet, a fleet's retry budget counting: a first try counts its request, one
            // atomic add, in line; a retry takes a token, out of line.
            Err(seen) if seen.is_budgeted_quiet() && !retry => {
                self.upstream.live().lease.admits(false);
                self.word = AdmissionWord::seen(seen);
                true
            }
            Err(_) => self.budgeted(retry),
        }
    }

    /// [`at_once_for`](Self::at_once_for) where the upstream's word says more than nothing:
    /// quiet with a fleet's retry budget, or held.
    #[cold]
    #[inline(never)]
    fn budgeted(&mut self, retry: bool) -> bool {
        // Read again: the word may have changed since, its budget gone with it.
        match self.upstream.quiet() {
            Some(seen) if !seen.is_budgeted() || self.upstream.live().lease.admits(retry) => {
                self.word = AdmissionWord::seen(seen);
                true
            }
            _ => false,
        }
    }

    /// The attempt succeeded.
    #[inline]
    pub(crate) fn succeeded(&mut self) {
        // Nothing was said when the attempt was admitted, and it was no probe: nothing to
        // clear (a failure reported meanwhile by a call that started later is left to count).
        if self.word.to_tell() {
            self.cleared();
        }
    }

    #[cold]
    fn cleared(&mut self) {
        let admission = self.take();
        self.upstream.succeeded(admission);
    }

    /// The attempt failed with `class` at `now`, on `run`'s policy.
    pub(crate) fn failed<R: Source, A: crate::engine::Count>(
        &mut self,
        class: Class,
        run: &Run<R, A>,
    ) {
        let admission = self.take();
        self.upstream
            .failed(admission, class, run.clock_now(), run.policy());
    }
}

impl Held for Admitted {
    /// A probe ended with no outcome (its call dropped, cancelled, panicked): freed at once.
    #[inline]
    fn let_go(&mut self) {
        if self.word.probing() {
            self.release();
        }
    }
}

impl Admitted {
    #[cold]
    #[inline(never)]
    fn release(&mut self) {
        let admission = self.take();
        self.upstream.released(admission);
    }
}

/// An attempt the upstream admitted: it tells the upstream how the attempt ended, and frees a
/// probe that ends with no outcome (dropped, cancelled, panicked) when it is dropped.
#[doc(hidden)]
#[derive(Debug)]
pub(crate) struct Ticket(Admitted);

impl Ticket {
    pub(crate) fn new(upstream: &'static Upstream, admission: Admission) -> Ticket {
        Ticket(Admitted::kept(upstream, AdmissionWord::of(admission)))
    }

    /// The admission, kept from now on by a call whose drop frees a probe (a route's word,
    /// between a move and its attempt, or a call's admission).
    pub(crate) fn into_word(mut self) -> AdmissionWord {
        std::mem::take(&mut self.0.word)
    }

    /// The admission, kept from now on by a call whose drop frees a probe.
    pub(crate) fn into_admitted(self) -> Admitted {
        let upstream = self.0.upstream;
        Admitted::kept(upstream, self.into_word())
    }

    /// The upstream that admitted the attempt.
    #[inline]
    pub(crate) fn upstream(&self) -> &'static Upstream {
        self.0.upstream
    }

    /// The ticket of the next attempt if `upstream` has nothing to say: the fast path, one
    /// atomic read.
    #[inline]
    pub(crate) fn at_once(upstream: &'static Upstream) -> Option<Ticket> {
        upstream
            .quiet()
            .map(|seen| Ticket(Admitted::kept(upstream, AdmissionWord::seen(seen))))
    }

    /// [`Admitted::at_once_for`], as a ticket: for a call's own attempt on `upstream`.
    #[inline]
    pub(crate) fn at_once_for(upstream: &'static Upstream, retry: bool) -> Option<Ticket> {
        let mut admitted = Admitted::idle(upstream);
        admitted.at_once_for(retry).then_some(Ticket(admitted))
    }

    /// The attempt succeeded.
    #[inline]
    #[cfg_attr(
        not(any(feature = "tower", feature = "reqwest-middleware", feature = "stream")),
        allow(dead_code)
    )]
    pub(crate) fn succeeded(mut self) {
        self.0.succeeded();
    }

    /// The attempt failed with `class` at `now`, on `run`'s policy.
    pub(crate) fn failed<R: Source, A: crate::engine::Count>(
        mut self,
        class: Class,
        run: &Run<R, A>,
    ) {
        self.0.failed(class, run);
    }
}

impl Drop for Ticket {
    #[inline]
    fn drop(&mut self) {
        Held::let_go(&mut self.0);
    }
}

/// The admission of a call's attempt on the upstream `U` names (its probe's epoch, the word it
/// read), kept in the call's [`Call`], whose drop frees a probe the call ended with no
/// outcome. Not public API.
#[doc(hidden)]
pub struct AdmittedOn<U> {
    word: AdmissionWord,
    on: PhantomData<fn() -> U>,
}

/// What a call keeps of its admission in its [`Call`]: [`AdmittedOn`] (its upstream named by
/// a type) or [`Admitted`] (by a pointer). Not public API.
#[doc(hidden)]
pub trait AdmissionKept: Held {
    /// The upstream.
    fn upstream(&self) -> &'static Upstream;
    /// What the admission says: the word read, and whether it is a probe.
    fn word(&self) -> AdmissionWord;
    /// Kept from a quiet word's read: no probe.
    fn read(&mut self, word: AdmissionWord);
    /// `step` on the admission as an [`Admitted`].
    fn step<T>(&mut self, step: impl FnOnce(&mut Admitted) -> T) -> T;
}

impl AdmissionKept for Admitted {
    #[inline(always)]
    fn upstream(&self) -> &'static Upstream {
        self.upstream
    }
    #[inline(always)]
    fn word(&self) -> AdmissionWord {
        self.word
    }
    #[inline(always)]
    fn read(&mut self, word: AdmissionWord) {
        self.word = word;
    }
    #[inline(always)]
    fn step<T>(&mut self, step: impl FnOnce(&mut Admitted) -> T) -> T {
        step(self)
    }
}

impl<U: Named<Upstream>> AdmissionKept for AdmittedOn<U> {
    #[inline(always)]
    fn upstream(&self) -> &'static Upstream {
        U::IT
    }
    #[inline(always)]
    fn word(&self) -> AdmissionWord {
        self.word
    }
    #[inline(always)]
    fn read(&mut self, word: AdmissionWord) {
        self.word = word;
    }
    /// In line, the upstream a constant.
    #[inline(always)]
    fn step<T>(&mut self, step: impl FnOnce(&mut Admitted) -> T) -> T {
        let mut admitted = Admitted::kept(U::IT, self.word);
        let stepped = step(&mut admitted);
        self.word = admitted.word;
        stepped
    }
}

/// [`at_once`] on a word that says more: a retry that takes a token of a fleet's retry
/// budget, or an attempt the upstream holds.
#[cold]
#[inline(never)]
fn admit_word<K: AdmissionKept>(
    kept: &mut K,
    word: Result<UpstreamStatus, UpstreamStatus>,
    retry: bool,
) -> bool {
    kept.step(|admitted| admitted.admit_word(word, retry))
}

impl<U: Named<Upstream>> AdmittedOn<U> {
    /// Nothing admitted yet.
    #[inline]
    pub const fn idle() -> Self {
        AdmittedOn {
            word: AdmissionWord::NOTHING,
            on: PhantomData,
        }
    }
}

impl<U: Named<Upstream>> Held for AdmittedOn<U> {
    #[inline]
    fn let_go(&mut self) {
        if self.word.probing() {
            AdmissionKept::step(self, Held::let_go);
        }
    }
}

/// The fast path of a call on one upstream: the call's next attempt admitted at once (`true`)
/// if its upstream has nothing to say, one atomic read.
#[inline(always)]
pub(crate) fn at_once<R: Source, K: AdmissionKept>(call: &mut Call<R, K>) -> bool {
    let (run, kept) = call.parts();
    let upstream = kept.upstream();
    match upstream.quiet_alone() {
        // Nothing but outage failures counted, which the admission keeps.
        Ok(seen) => {
            kept.read(AdmissionWord::seen(seen));
            true
        }
        // Quiet, a fleet's retry budget counting: a first try counts its request, one atomic
        // add, in line.
        Err(seen) if seen.is_budgeted_quiet() && run.attempts() == 0 => {
            upstream.live().lease.admits(false);
            kept.read(AdmissionWord::seen(seen));
            true
        }
        word => admit_word(kept, word, run.attempts() > 0),
    }
}

/// An error type that can hold an [`UpstreamPaused`], asked for by a retry on an upstream,
/// so a missing `From` is reported with the fix. Not public API.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a retry on an upstream needs an error type that can hold a `retry_runtime::UpstreamPaused`, and `{Self}` cannot",
    label = "`{Self}` does not implement `From<retry_runtime::UpstreamPaused>`",
    note = "add a variant for it to `{Self}` (with thiserror: `#[error(transparent)] Paused(#[from] retry_runtime::UpstreamPaused)`), or `impl From<retry_runtime::UpstreamPaused> for {Self}`: an attempt held back past the call's end by the upstream's pause or outage gate becomes one"
)]
pub trait HoldsUpstreamPaused {
    /// The error of an attempt the upstream held back.
    fn hold(paused: UpstreamPaused) -> Self;
}

impl<E: From<UpstreamPaused>> HoldsUpstreamPaused for E {
    fn hold(paused: UpstreamPaused) -> Self {
        E::from(paused)
    }
}
