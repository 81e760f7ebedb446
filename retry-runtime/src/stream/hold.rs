//! The hold before a stream's commit point: what is kept back from the caller, and when it is
//! let go. No I/O: [`RetryStream`](crate::RetryStream) holds its items here, and the HTTP
//! layers count a response's events and bytes here, so the rule and its limits are written
//! once.

use std::collections::VecDeque;

/// How many items a stream holds before its commit point, by default, before it commits
/// anyway: a preamble that never ends is not held without bound.
///
/// ```
/// assert_eq!(retry_runtime::DEFAULT_HOLD_ITEMS, 64);
/// ```
pub const DEFAULT_HOLD_ITEMS: usize = 64;

/// How many bytes a stream holds before its commit point, by default, where its items are
/// weighed ([`RetryStream::hold_bytes`](crate::RetryStream::hold_bytes)); the HTTP layers
/// weigh the bytes read.
///
/// ```
/// assert_eq!(retry_runtime::DEFAULT_HOLD_BYTES, 64 * 1024);
/// ```
pub const DEFAULT_HOLD_BYTES: usize = 64 * 1024;

/// How much a hold keeps before it commits anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Items counted (events, for a layer), at least one.
    pub(crate) items: usize,
    /// Their weight (bytes, where they are weighed).
    pub(crate) bytes: usize,
}

impl Limits {
    /// [`DEFAULT_HOLD_ITEMS`] and [`DEFAULT_HOLD_BYTES`].
    pub(crate) const DEFAULT: Limits = Limits {
        items: DEFAULT_HOLD_ITEMS,
        bytes: DEFAULT_HOLD_BYTES,
    };
}

/// The items kept back before the commit point, counted and weighed against the limits.
#[derive(Debug)]
pub(crate) struct Hold<T> {
    held: VecDeque<T>,
    counted: usize,
    weight: usize,
    limits: Limits,
}

impl<T> Hold<T> {
    /// An empty hold: nothing allocated until an item is kept.
    pub(crate) const fn new(limits: Limits) -> Hold<T> {
        Hold {
            held: VecDeque::new(),
            counted: 0,
            weight: 0,
            limits,
        }
    }

    /// Drop what is held, and start counting again.
    pub(crate) fn clear(&mut self) {
        *self = Hold::new(self.limits);
    }

    /// Count one more item, of `weight`: whether it commits, because it is content or
    /// because the hold is full with it.
    #[inline]
    pub(crate) fn count(&mut self, content: bool, weight: usize) -> bool {
        self.counted = self.counted.saturating_add(1);
        self.weigh(weight);
        content || self.is_full()
    }

    /// Add `weight` to what is held, apart from any item (a layer's bytes read).
    #[inline]
    pub(crate) fn weigh(&mut self, weight: usize) {
        self.weight = self.weight.saturating_add(weight);
    }

    /// Whether the hold has reached a limit: it commits anyway.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.counted >= self.limits.items.max(1) || self.weight >= self.limits.bytes
    }

    /// Nothing has been counted: a first item that is content commits without being held.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.counted == 0
    }

    /// How many items were counted.
    pub(crate) fn counted(&self) -> usize {
        self.counted
    }

    /// Keep `item` back until the commit point.
    #[inline]
    pub(crate) fn keep(&mut self, item: T) {
        self.held.push_back(item);
    }

    /// The items kept, in order, for the commit point.
    pub(crate) fn release(self) -> VecDeque<T> {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limits = Limits {
        items: 3,
        bytes: 10,
    };

    #[test]
    fn content_commits_at_once() {
        let mut hold = Hold::<u8>::new(SMALL);
        assert!(hold.is_empty());
        assert!(hold.count(true, 0));
    }

    #[test]
    fn a_preamble_commits_at_the_item_limit() {
        let mut hold = Hold::<u8>::new(SMALL);
        assert!(!hold.count(false, 0));
        assert!(!hold.count(false, 0));
        assert!(hold.count(false, 0));
        assert_eq!(hold.counted(), 3);
    }

    #[test]
    fn a_preamble_commits_at_the_byte_limit() {
        let mut hold = Hold::<u8>::new(SMALL);
        assert!(!hold.count(false, 9));
        assert!(hold.count(false, 1));
    }

    #[test]
    fn bytes_weighed_apart_from_items_fill_the_hold() {
        let mut hold = Hold::<u8>::new(SMALL);
        hold.weigh(10);
        assert!(hold.is_full());
    }

    #[test]
    fn an_item_limit_of_zero_holds_one() {
        let mut hold = Hold::<u8>::new(Limits {
            items: 0,
            bytes: 10,
        });
        assert!(hold.count(false, 0));
    }

    #[test]
    fn released_items_keep_their_order() {
        let mut hold = Hold::new(SMALL);
        hold.keep(1);
        hold.keep(2);
        assert_eq!(hold.release(), [1, 2]);
    }

    #[test]
    fn weights_saturate() {
        let mut hold = Hold::<u8>::new(Limits {
            items: 10,
            bytes: usize::MAX,
        });
        hold.weigh(usize::MAX);
        assert!(hold.count(false, usize::MAX));
    }
}
