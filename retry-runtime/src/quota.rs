//! A cross-call retry budget: a lock-free token bucket that every retry draws from and every
//! success refills, as the AWS SDKs' retry quota (standard mode), gRPC's retry throttling and
//! Finagle's RetryBudget do. When it runs low, calls still make their first attempt but do not
//! retry, so an outage is not multiplied by every caller's ladder.
//!
//! The figures are the AWS SDKs' standard mode ("Retry Behavior 2.0"): 500 tokens; a retry
//! costs 5, or 10 after a timeout; a call that succeeds after retries gives back what its last
//! retry cost; a call that succeeds on its first try adds 1; never more than the capacity.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::class::Class;

/// A retry quota. Share one `static` among the calls to one dependency.
///
/// ```
/// use retry_runtime::{Class, Quota};
///
/// static MODEL_QUOTA: Quota = Quota::new(10);
/// assert!(MODEL_QUOTA.withdraw(Class::Unavailable { retry_after: None })); // costs 5
/// assert!(MODEL_QUOTA.withdraw(Class::Transport)); // costs 5
/// assert!(!MODEL_QUOTA.withdraw(Class::Unavailable { retry_after: None })); // empty: no retry
/// MODEL_QUOTA.succeeded_after(Class::Transport); // its last retry's 5 back
/// MODEL_QUOTA.deposit(); // a first-try success: 1
/// assert_eq!(MODEL_QUOTA.available(), 6);
/// ```
#[derive(Debug)]
pub struct Quota {
    tokens: AtomicU32,
    capacity: u32,
    retry_cost: u32,
    timeout_cost: u32,
    success_refill: u32,
}

impl Quota {
    /// A full quota of `capacity` tokens, with the AWS standard costs: a retry costs 5, a
    /// timeout's retry 10, a first-try success returns 1.
    pub const fn new(capacity: u32) -> Quota {
        Quota {
            tokens: AtomicU32::new(capacity),
            capacity,
            retry_cost: 5,
            timeout_cost: 10,
            success_refill: 1,
        }
    }

    /// The AWS SDKs' standard quota: 500 tokens.
    pub const fn standard() -> Quota {
        Quota::new(500)
    }

    /// This quota starting with `tokens` (at most its capacity) rather than full.
    ///
    /// ```
    /// use retry_runtime::Quota;
    /// static LOW: Quota = Quota::standard().starting_at(5);
    /// assert_eq!(LOW.available(), 5);
    /// ```
    pub const fn starting_at(mut self, tokens: u32) -> Quota {
        let tokens = if tokens < self.capacity {
            tokens
        } else {
            self.capacity
        };
        self.tokens = AtomicU32::new(tokens);
        self
    }

    /// This quota with other costs: a retry, a retry after a timeout, and what a first-try
    /// success adds.
    pub const fn with_costs(mut self, retry: u32, timeout: u32, success_refill: u32) -> Quota {
        self.retry_cost = retry;
        self.timeout_cost = timeout;
        self.success_refill = success_refill;
        self
    }

    /// Take the cost of retrying a failure of `class`; false, taking nothing, if too few
    /// tokens are left.
    pub fn withdraw(&self, class: Class) -> bool {
        let cost = self.cost(class);
        self.tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |tokens| {
                tokens.checked_sub(cost)
            })
            .is_ok()
    }

    /// Give back what [`withdraw`](Self::withdraw) took for `class`, up to the capacity (a
    /// retry that was paid for and then not made).
    pub fn refund(&self, class: Class) {
        self.add(self.cost(class));
    }

    /// A call succeeded on its first try: add the refill (1), up to the capacity.
    pub fn deposit(&self) {
        self.add(self.success_refill);
    }

    /// A call succeeded after retrying, its last retry after a failure of `class`: give back
    /// what that retry cost, up to the capacity.
    pub fn succeeded_after(&self, class: Class) {
        self.refund(class);
    }

    fn cost(&self, class: Class) -> u32 {
        match class {
            Class::Timeout => self.timeout_cost,
            _ => self.retry_cost,
        }
    }

    fn add(&self, tokens: u32) {
        let _ = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.capacity).then(|| held.saturating_add(tokens).min(self.capacity))
            });
    }

    /// The tokens left.
    pub fn available(&self) -> u32 {
        self.tokens.load(Ordering::Acquire)
    }
}

/// A quota is its own handle, so that a [`Retry`](crate::Retry) takes a `&'static Quota` or an
/// `Arc<Quota>` alike.
impl AsRef<Quota> for Quota {
    fn as_ref(&self) -> &Quota {
        self
    }
}
