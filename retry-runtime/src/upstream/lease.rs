//! [`BudgetLease`]: a fleet's retry budget on one upstream, as this process holds it. The
//! fleet store leases tokens to it and reads its requests back ([`FleetSide`](super::FleetSide));
//! a call's first try counts a request and a retry takes a token, one atomic step each.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The tokens leased to this process, the requests (first tries) made since the fleet store
/// last counted them, and whether a retry found no token since.
#[derive(Debug)]
pub(crate) struct BudgetLease {
    leased: AtomicU32,
    requests: AtomicU32,
    wanting: AtomicBool,
}

impl BudgetLease {
    pub(crate) const fn new() -> BudgetLease {
        BudgetLease {
            leased: AtomicU32::new(0),
            requests: AtomicU32::new(0),
            wanting: AtomicBool::new(false),
        }
    }

    /// Whether an attempt may go as far as the budget says: a first try (`retry` false)
    /// counts as a request and goes; a retry takes one of the tokens leased to this process,
    /// or (none left) is held until the fleet store leases more.
    #[inline]
    pub(crate) fn admits(&self, retry: bool) -> bool {
        if !retry {
            // A first try's whole cost: one atomic add, in line.
            self.requests.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        self.take()
    }

    /// A token a retry took and did not use, back to the lease.
    pub(crate) fn refund(&self) {
        self.leased.fetch_add(1, Ordering::AcqRel);
    }

    /// A retry takes a token, or says it found none.
    #[cold]
    fn take(&self) -> bool {
        let took = self
            .leased
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_sub(1)
            })
            .is_ok();
        if !took {
            self.wanting.store(true, Ordering::Release);
        }
        took
    }

    /// For the fleet store: the requests made since it last asked, the tokens held here, and
    /// whether a retry found none since.
    pub(crate) fn drain(&self) -> (u32, u32, bool) {
        let requests = self.requests.swap(0, Ordering::Relaxed);
        let held = self.leased.load(Ordering::Acquire);
        (requests, held, self.wanting.swap(false, Ordering::AcqRel))
    }

    /// The fleet store leased `tokens` more to this process.
    pub(crate) fn granted(&self, tokens: u32) {
        self.leased.fetch_add(tokens, Ordering::AcqRel);
    }

    /// Nothing leased, nothing counted.
    pub(crate) fn reset(&self) {
        self.leased.store(0, Ordering::Release);
        self.requests.store(0, Ordering::Relaxed);
    }
}
