//! [`UpstreamStatus`]: what an upstream has to say, one word read on every attempt. Its bits
//! and their tests live here alone.

use std::fmt;

/// A pause by a provider's hint.
const PAUSED: u32 = 1;
/// An open outage gate.
const GATED: u32 = 1 << 1;
/// Outage failures being counted toward opening the gate.
const COUNTING: u32 = 1 << 2;
/// A fleet's retry budget: a call's first try counts as a request, and each retry takes a
/// token the fleet leased to this process. Not something the upstream says of an attempt: a
/// quiet upstream with a budget is still quiet.
const BUDGET: u32 = 1 << 3;
/// A pacer that holds attempts to what the key has left (it heard the provider's rate-limit
/// headers, or learned a rate from its refusals).
const PACED: u32 = 1 << 4;
/// What holds an attempt back, or may.
const HOLDS: u32 = PAUSED | GATED | PACED;

/// What an [`Upstream`](crate::Upstream) had to say when it was read: paused, gated,
/// counting outage failures, on a fleet's retry budget, paced. An admission carries it
/// ([`Admission::Send`](crate::Admission::Send)), so that a success clears only what was
/// there to clear.
///
/// ```
/// use retry_runtime::{Admission, Upstream, UpstreamStatus};
///
/// static KEY: Upstream = Upstream::new("key");
/// let Admission::Send { seen, .. } = KEY.admit(tokio::time::Instant::now()) else { panic!() };
/// assert_eq!(seen, UpstreamStatus::NOTHING);
/// assert!(!seen.is_paused() && !seen.is_gated() && !seen.is_paced());
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct UpstreamStatus(u32);

impl UpstreamStatus {
    /// Nothing to say: what a quiet upstream, never paused, gated or paced, says.
    pub const NOTHING: UpstreamStatus = UpstreamStatus(0);

    /// Whether a provider's hint paused the upstream.
    pub const fn is_paused(self) -> bool {
        self.0 & PAUSED != 0
    }

    /// Whether its outage gate was open.
    pub const fn is_gated(self) -> bool {
        self.0 & GATED != 0
    }

    /// Whether outage failures were being counted toward opening the gate.
    pub const fn is_counting(self) -> bool {
        self.0 & COUNTING != 0
    }

    /// Whether a fleet's retry budget counted its attempts.
    pub const fn is_budgeted(self) -> bool {
        self.0 & BUDGET != 0
    }

    /// Whether its pacer held attempts to what the key had left.
    pub const fn is_paced(self) -> bool {
        self.0 & PACED != 0
    }

    /// The status of an upstream's state, from its parts.
    pub(crate) fn of(
        paused: bool,
        gated: bool,
        counting: bool,
        budgeted: bool,
        paced: bool,
    ) -> UpstreamStatus {
        let bit = |on: bool, bit: u32| if on { bit } else { 0 };
        UpstreamStatus(
            bit(paused, PAUSED)
                | bit(gated, GATED)
                | bit(counting, COUNTING)
                | bit(budgeted, BUDGET)
                | bit(paced, PACED),
        )
    }

    /// The word as an upstream's atomic keeps it.
    #[inline(always)]
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }

    /// The status an upstream's atomic kept.
    #[inline(always)]
    pub(crate) const fn from_bits(bits: u32) -> UpstreamStatus {
        UpstreamStatus(bits)
    }

    /// Nothing holds an attempt back: no pause, no gate, no pacer.
    #[inline(always)]
    pub(crate) const fn is_quiet(self) -> bool {
        self.0 & HOLDS == 0
    }

    /// The pacer is all that may hold an attempt back.
    #[inline(always)]
    pub(crate) const fn is_paced_only(self) -> bool {
        self.0 & HOLDS == PACED
    }

    /// Nothing to say at all but that outage failures are being counted: the fast path of a
    /// call's own attempt.
    #[inline(always)]
    pub(crate) const fn is_alone(self) -> bool {
        self.0 & !COUNTING == 0
    }

    /// Nothing to say but the pacer (and outage failures counted).
    #[inline(always)]
    pub(crate) const fn is_paced_alone(self) -> bool {
        self.0 & !COUNTING == PACED
    }

    /// Quiet, with a fleet's retry budget counting its attempts.
    #[inline(always)]
    pub(crate) const fn is_budgeted_quiet(self) -> bool {
        self.0 & (HOLDS | BUDGET) == BUDGET
    }

    /// Held by a pause or a gate.
    #[inline(always)]
    pub(crate) const fn is_held(self) -> bool {
        self.0 & (PAUSED | GATED) != 0
    }

    /// This status with the pacer's part spent: an attempt it admitted on credit.
    #[inline(always)]
    pub(crate) const fn unpaced(self) -> UpstreamStatus {
        UpstreamStatus(self.0 & !PACED)
    }

    /// What a success has to clear: anything said but the budget and the pacer.
    #[inline(always)]
    pub(crate) const fn has_to_clear(self) -> bool {
        self.0 & !(BUDGET | PACED) != 0
    }

    /// What a call keeps of it in its admission (below `limit`, a power of two): all but the
    /// budget, which is nothing to clear after a success.
    #[inline(always)]
    pub(crate) const fn kept(self, limit: u64) -> u64 {
        (self.0 as u64) & (limit - 1) & !(BUDGET as u64)
    }
}

impl fmt::Debug for UpstreamStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (PAUSED, "paused"),
            (GATED, "gated"),
            (COUNTING, "counting"),
            (BUDGET, "budgeted"),
            (PACED, "paced"),
        ];
        let mut set = f.debug_set();
        for (bit, name) in names {
            if self.0 & bit != 0 {
                set.entry(&format_args!("{name}"));
            }
        }
        set.finish()
    }
}
