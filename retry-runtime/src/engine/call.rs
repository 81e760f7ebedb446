//! [`Call`]: a run that reports itself when dropped unfinished, what the attribute's expansion
//! and `Retry::run` hold.

use super::run::Run;
use super::source::Source;

/// A [`Run`] that reports itself when dropped unfinished: what the attribute's expansion and
/// [`Retry::run`](super::Retry::run) hold. Not public API.
#[doc(hidden)]
pub struct Call<R: Source>(Run<R>);

impl<R: Source> Call<R> {
    /// A call not yet started, as [`Run::new`].
    #[inline]
    pub const fn new(source: R) -> Self {
        Call(Run::new(source))
    }
}

impl<R: Source> std::ops::Deref for Call<R> {
    type Target = Run<R>;
    #[inline]
    fn deref(&self) -> &Run<R> {
        &self.0
    }
}

impl<R: Source> std::ops::DerefMut for Call<R> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Run<R> {
        &mut self.0
    }
}

impl<R: Source> Drop for Call<R> {
    #[inline]
    fn drop(&mut self) {
        self.0.dropped();
    }
}
