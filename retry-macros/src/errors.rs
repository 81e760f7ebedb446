//! Collecting independent errors, for `#[retry]` and `#[derive(Classify)]` alike, so one
//! expansion reports every mistake at once, in the order the user wrote the tokens they point
//! at.

use syn::Error;

/// Errors found so far, each with the position of the argument it is about.
#[derive(Default)]
pub(crate) struct Errors(Vec<(usize, Error)>);

impl Errors {
    /// An error about the argument at `position` (0 for the first key of the attribute).
    pub(crate) fn push_at(&mut self, position: usize, error: Error) {
        self.0.push((position, error));
    }

    /// An error about no argument in particular, reported after those that are.
    pub(crate) fn push(&mut self, error: Error) {
        self.push_at(usize::MAX, error);
    }

    /// The value, or `None` with its error recorded at `position`.
    pub(crate) fn keep_at<T>(&mut self, position: usize, result: syn::Result<T>) -> Option<T> {
        result.map_err(|error| self.push_at(position, error)).ok()
    }

    /// How many errors have been found: a check that compares it before and after itself
    /// learns whether it found any.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The errors, in order, to be reported later among others.
    pub(crate) fn into_vec(mut self) -> Vec<Error> {
        self.0.sort_by_key(|(position, _)| *position);
        self.0.into_iter().map(|(_, error)| error).collect()
    }

    /// The errors combined into one `syn::Error` that renders each at its own span.
    pub(crate) fn finish(mut self) -> syn::Result<()> {
        // Stable: errors about one argument keep the order they were found in.
        self.0.sort_by_key(|(position, _)| *position);
        match combine(self.0.into_iter().map(|(_, error)| error)) {
            None => Ok(()),
            Some(error) => Err(error),
        }
    }
}

/// Errors about no argument in particular, in their order.
impl Extend<Error> for Errors {
    fn extend<I: IntoIterator<Item = Error>>(&mut self, errors: I) {
        for error in errors {
            self.push(error);
        }
    }
}

/// Every error, in one `syn::Error` that renders each at its own span, in order; `None` if
/// there are none.
fn combine(errors: impl IntoIterator<Item = Error>) -> Option<Error> {
    errors.into_iter().reduce(|mut all, error| {
        all.combine(error);
        all
    })
}
