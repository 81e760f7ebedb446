//! A run's attempt counter ([`Count`]): a `u16` for a call, a `u32` for a stream.

/// A [`Run`]'s attempt counter: a `u16` for a call, whose ladder stops at
/// [`Policy::MAX_ATTEMPTS`], which keeps `Run` to four words; a `u32` for a stream, whose
/// resumes renew its ladder without a bound of the policy's. Not public API.
#[doc(hidden)]
pub trait Count: Copy {
    /// No attempt yet.
    const ZERO: Self;
    /// The count.
    fn get(self) -> u32;
    /// One more: saturating, at `u16::MAX` (never reached by a call's ladder) or `u32::MAX`.
    #[must_use]
    fn next(self) -> Self;
}

impl Count for u16 {
    const ZERO: u16 = 0;
    #[inline]
    fn get(self) -> u32 {
        u32::from(self)
    }
    #[inline]
    fn next(self) -> u16 {
        self.saturating_add(1)
    }
}

impl Count for u32 {
    const ZERO: u32 = 0;
    #[inline]
    fn get(self) -> u32 {
        self
    }
    #[inline]
    fn next(self) -> u32 {
        self.saturating_add(1)
    }
}
