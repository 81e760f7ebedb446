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
use crate::upstream::{Admission, BUDGET, Named, Upstream, UpstreamPaused, UpstreamStore};

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
    /// The gate's probe's epoch, if [`PROBE`] is set.
    epoch: u32,
    /// What the upstream had to say when it admitted the attempt (its word; 0: nothing), and
    /// [`PROBE`] until the upstream is told how the probe ended: two words in all, so a call's
    /// future carries little.
    flags: u32,
}

/// The admission is the gate's probe, not yet told how it ended.
const PROBE: u32 = 1 << 8;
/// The upstream's word, as it was read, but for the budget's bit: a budget is nothing to clear
/// after a success.
const SEEN: u32 = (PROBE - 1) & !BUDGET;

impl Admitted {
    /// An admission on `upstream` with nothing to tell: what a call keeps before its first.
    #[inline]
    pub const fn idle(upstream: &'static Upstream) -> Admitted {
        Admitted {
            upstream,
            epoch: 0,
            flags: 0,
        }
    }

    fn new(upstream: &'static Upstream, admission: Admission) -> Admitted {
        let (probe, seen) = match admission {
            Admission::Send { probe, seen } => (probe, seen),
            _ => (None, 0),
        };
        Admitted {
            upstream,
            epoch: probe.unwrap_or(0),
            flags: (seen & SEEN) | if probe.is_some() { PROBE } else { 0 },
        }
    }

    /// The admission on the same upstream of a probe's `epoch` and `flags`, as
    /// [`parts`](Self::parts) gave them.
    #[inline(always)]
    pub(crate) const fn with(self, epoch: u32, flags: u32) -> Admitted {
        Admitted {
            epoch,
            flags,
            ..self
        }
    }

    /// A probe's epoch and the flags: what a call keeps of its admission beside its upstream.
    #[inline(always)]
    pub(crate) const fn parts(&self) -> (u32, u32) {
        (self.epoch, self.flags)
    }

    /// The flags of an admission that read `seen` from a quiet upstream.
    #[inline(always)]
    pub(crate) const fn seen(seen: u32) -> u32 {
        seen & SEEN
    }

    /// Whether an admission with these flags is a probe not yet told how it ended.
    #[inline(always)]
    pub(crate) const fn probing(flags: u32) -> bool {
        flags & PROBE != 0
    }

    /// Whether an admission with these flags has a success to tell its upstream: the upstream
    /// said something when it admitted the attempt, or it was a probe.
    #[inline(always)]
    pub(crate) const fn to_tell(flags: u32) -> bool {
        flags & (SEEN | PROBE) != 0
    }

    #[inline]
    fn probe(&self) -> Option<u32> {
        (self.flags & PROBE != 0).then_some(self.epoch)
    }

    /// The admission, as the upstream reads it back; from now on, nothing to free.
    fn take(&mut self) -> Admission {
        let admission = Admission::Send {
            probe: self.probe(),
            seen: self.flags & SEEN,
        };
        self.flags = 0;
        admission
    }

    /// The admission as a ticket, which frees a probe if it is dropped; the call keeps
    /// nothing to free.
    pub(crate) fn take_ticket(&mut self) -> Ticket {
        let ticket = Ticket(Admitted {
            upstream: self.upstream,
            epoch: self.epoch,
            flags: self.flags,
        });
        self.flags = 0;
        ticket
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
    fn admit_word(&mut self, word: Result<u32, u32>, retry: bool) -> bool {
        match word {
            // Nothing but `COUNTING`, which `SEEN` keeps.
            Ok(seen) => {
                self.flags = seen;
                true
            }
            // Quiet, a fleet's retry budget counting: a first try counts its request, one
            // atomic add, in line; a retry takes a token, out of line.
            Err(seen) if Upstream::is_budgeted_quiet(seen) && !retry => {
                self.upstream.budget_admits(false);
                self.flags = seen & SEEN;
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
            Some(seen) if seen & BUDGET == 0 || self.upstream.budget_admits(retry) => {
                self.flags = seen & SEEN;
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
        if self.flags & (SEEN | PROBE) != 0 {
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
        if self.flags & PROBE != 0 {
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
        Ticket(Admitted::new(upstream, admission))
    }

    /// The admission, as plain values (a probe's epoch, the word read), the ticket told:
    /// kept by a route between a move and its attempt.
    pub(crate) fn into_parts(mut self) -> (Option<u32>, u32) {
        let probe = self.0.probe();
        let seen = self.0.flags & SEEN;
        self.0.flags = 0;
        (probe, seen)
    }

    /// The admission, kept from now on by a call whose drop frees a probe.
    pub(crate) fn into_admitted(mut self) -> Admitted {
        let admitted = Admitted {
            upstream: self.0.upstream,
            epoch: self.0.epoch,
            flags: self.0.flags,
        };
        self.0.flags = 0;
        admitted
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
        upstream.quiet().map(|seen| {
            Ticket(Admitted {
                flags: seen & SEEN,
                ..Admitted::idle(upstream)
            })
        })
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
    epoch: u32,
    flags: u32,
    on: PhantomData<fn() -> U>,
}

/// What a call keeps of its admission in its [`Call`]: [`AdmittedOn`] (its upstream named by
/// a type) or [`Admitted`] (by a pointer). Not public API.
#[doc(hidden)]
pub trait AdmissionKept: Held {
    /// The upstream.
    fn upstream(&self) -> &'static Upstream;
    /// What the admission says: the word read, and whether it is a probe.
    fn flags(&self) -> u32;
    /// Kept from a quiet word's read: no probe.
    fn read(&mut self, flags: u32);
    /// `step` on the admission as an [`Admitted`].
    fn step<T>(&mut self, step: impl FnOnce(&mut Admitted) -> T) -> T;
}

impl AdmissionKept for Admitted {
    #[inline(always)]
    fn upstream(&self) -> &'static Upstream {
        self.upstream
    }
    #[inline(always)]
    fn flags(&self) -> u32 {
        self.flags
    }
    #[inline(always)]
    fn read(&mut self, flags: u32) {
        self.flags = flags;
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
    fn flags(&self) -> u32 {
        self.flags
    }
    #[inline(always)]
    fn read(&mut self, flags: u32) {
        self.flags = flags;
    }
    /// In line, the upstream a constant.
    #[inline(always)]
    fn step<T>(&mut self, step: impl FnOnce(&mut Admitted) -> T) -> T {
        let mut admitted = Admitted {
            upstream: U::IT,
            epoch: self.epoch,
            flags: self.flags,
        };
        let stepped = step(&mut admitted);
        self.epoch = admitted.epoch;
        self.flags = admitted.flags;
        stepped
    }
}

/// [`upstream_at_once`] on a word that says more: a retry that takes a token of a fleet's
/// retry budget, or an attempt the upstream holds.
#[cold]
#[inline(never)]
fn admit_word<K: AdmissionKept>(kept: &mut K, word: Result<u32, u32>, retry: bool) -> bool {
    kept.step(|admitted| admitted.admit_word(word, retry))
}

impl<U: Named<Upstream>> AdmittedOn<U> {
    /// Nothing admitted yet.
    #[inline]
    pub const fn idle() -> Self {
        AdmittedOn {
            epoch: 0,
            flags: 0,
            on: PhantomData,
        }
    }
}

impl<U: Named<Upstream>> Held for AdmittedOn<U> {
    #[inline]
    fn let_go(&mut self) {
        if Admitted::probing(self.flags) {
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
        // Nothing but `COUNTING`, which `SEEN` keeps.
        Ok(seen) => {
            kept.read(seen);
            true
        }
        // Quiet, a fleet's retry budget counting: a first try counts its request, one atomic
        // add, in line.
        Err(seen) if Upstream::is_budgeted_quiet(seen) && run.attempts() == 0 => {
            upstream.budget_admits(false);
            kept.read(Admitted::seen(seen));
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
