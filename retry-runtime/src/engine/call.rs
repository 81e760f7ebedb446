//! [`Call`]: a run that reports itself when dropped unfinished, what the attribute's expansion
//! and `Retry::run` hold; with what the call keeps beside its run ([`Held`]), let go of in the
//! same drop.

use super::run::Run;
use super::source::Source;

/// A [`Run`] that reports itself when dropped unfinished: what the attribute's expansion and
/// [`Retry::run`](super::Retry::run) hold. Beside it, what the call keeps between its steps
/// (an upstream's admission, a route across upstreams), let go of when the call is dropped:
/// one drop for both, so a call's future gains no drop of its own for what it keeps. Not
/// public API.
#[doc(hidden)]
pub struct Call<R: Source, H: Held = ()>(Run<R>, H);

/// What a [`Call`] keeps beside its run, and what it lets go of if the call is dropped
/// unfinished (a probe it was admitted as, say). Not public API.
#[doc(hidden)]
pub trait Held {
    /// The call is dropped.
    fn let_go(&mut self);
}

impl Held for () {
    #[inline(always)]
    fn let_go(&mut self) {}
}

impl<R: Source> Call<R> {
    /// A call not yet started, as [`Run::new`].
    #[inline]
    pub const fn new(source: R) -> Self {
        Call(Run::new(source), ())
    }
}

impl<R: Source, H: Held> Call<R, H> {
    /// A call not yet started, keeping `held` beside its run.
    #[inline]
    pub const fn with(source: R, held: H) -> Self {
        Call(Run::new(source), held)
    }

    /// What the call keeps beside its run.
    #[inline(always)]
    pub fn kept(&self) -> &H {
        &self.1
    }

    /// The run and what the call keeps beside it, apart.
    #[inline(always)]
    pub fn parts(&mut self) -> (&mut Run<R>, &mut H) {
        (&mut self.0, &mut self.1)
    }
}

impl<R: Source, H: Held> std::ops::Deref for Call<R, H> {
    type Target = Run<R>;
    #[inline]
    fn deref(&self) -> &Run<R> {
        &self.0
    }
}

impl<R: Source, H: Held> std::ops::DerefMut for Call<R, H> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Run<R> {
        &mut self.0
    }
}

impl<R: Source, H: Held> Drop for Call<R, H> {
    #[inline]
    fn drop(&mut self) {
        // Only a call that had not ended can hold anything to let go of (an admission is
        // told how its attempt ended before the call ends).
        let held = &mut self.1;
        self.0.dropped(|| held.let_go());
    }
}
