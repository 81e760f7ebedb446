//! Pacing: what an upstream's key has left, as the provider last said it in an answer's
//! headers (corrected for what this process sent since), or as learned from its refusals where
//! it says nothing; an attempt waits until the key holds what it costs, so that it is never
//! sent into a refusal the provider announced. The rules are in
//! [the guide's pacing chapter](crate::guide::pacing).

mod bucket;
mod learner;
mod said;

pub use said::{RateLeft, RateSaid};

use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use bucket::Bucket;
use learner::Learner;

/// How many sends back a token count is kept for, to correct a report by what was sent since
/// its request (a report older than this corrects by every token kept).
const KEPT: usize = 256;

/// An upstream's pacer: its key's requests and tokens, as last said; its learned rate where
/// the key says nothing; and what this process sent since. Its own lock, never held while
/// anything is told.
#[derive(Debug)]
pub(crate) struct Pacer {
    /// Sends so far, wrapping: read with no lock by an attempt's wrapper, which hands it back
    /// with the answer's headers.
    sent: AtomicU32,
    /// Sends the key has room for, granted (and taken from the requests' bucket) under the
    /// lock: an attempt takes one with no lock and no clock. Only while the key's tokens are
    /// not paced and no rate is learned.
    credit: AtomicU32,
    state: Mutex<Paced>,
}

#[derive(Debug)]
struct Paced {
    requests: Bucket,
    tokens: Bucket,
    learner: Learner,
    /// The send the freshest report answered: an older report is not applied.
    applied: u32,
    /// Tokens sent so far, and at each of the last [`KEPT`] sends.
    sent_tokens: u64,
    tokens_at: [u64; KEPT],
    /// This process's part of the key: 1 alone, `1/n` for `n` processes sharing it.
    share: f64,
}

/// How an attempt asks the pacer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// Take it if the key holds it now; reserve nothing otherwise (a fast path that would
    /// rather not wait here).
    Try,
    /// Take it, or reserve it and wait.
    Reserve,
    /// The attempt waited for a reservation made earlier, which is given back first and goes
    /// before anyone still waiting.
    Redeem,
    /// Only say what an attempt would be told: take nothing, reserve nothing.
    Peek,
}

/// What the pacer says of an attempt about to be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paces {
    /// Send it: what it costs is taken.
    Go,
    /// Wait until then: what it costs is reserved, and must be redeemed or released.
    Wait(Instant),
    /// It costs more than the key's whole limit: it can never be sent.
    Never,
}

impl Pacer {
    pub(crate) const fn new() -> Pacer {
        Pacer {
            sent: AtomicU32::new(0),
            credit: AtomicU32::new(0),
            state: Mutex::new(Paced {
                requests: Bucket::new(),
                tokens: Bucket::new(),
                learner: Learner::new(),
                applied: 0,
                sent_tokens: 0,
                tokens_at: [0; KEPT],
                share: 1.0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Paced> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One send on the credit granted, if any is left: one atomic step.
    #[inline]
    pub(crate) fn take_credit(&self) -> bool {
        let took = self
            .credit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(1)
            })
            .is_ok();
        if took {
            self.sent.fetch_add(1, Ordering::Relaxed);
        }
        took
    }

    /// Grant again what the key has room for at `now`: half of what is left and not
    /// reserved, taken from the bucket now. `reported`: the bucket was just set from an
    /// answer, which knows nothing of the credit left unspent (never sent); otherwise that
    /// goes back to the bucket first.
    fn grant(&self, paced: &mut Paced, now: Instant, reported: bool) {
        let unspent = self.credit.swap(0, Ordering::Relaxed);
        if !reported {
            paced.requests.debit(now, -f64::from(unspent));
        }
        if !paced.requests.is_known() || paced.tokens.is_known() || paced.learner.is_on() {
            return;
        }
        let room = paced.requests.room(now);
        let grant = (room / 2.0).floor().clamp(0.0, 1_024.0);
        if grant >= 1.0 {
            paced.requests.debit(now, grant);
            self.credit.store(grant as u32, Ordering::Relaxed);
        }
    }

    /// Sends so far: what an attempt's wrapper keeps, to hand back with its answer.
    #[inline]
    pub(crate) fn sent(&self) -> u32 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Take what an attempt of `tokens` costs at `now`, or (as `ask` says) reserve it and say
    /// when it can go.
    pub(crate) fn take(&self, now: Instant, tokens: u32, ask: Ask) -> Paces {
        let mut paced = self.lock();
        let tokens = f64::from(tokens);
        let redeem = ask == Ask::Redeem;
        if redeem {
            paced.unreserve(tokens);
        }
        if paced.tokens.exceeds_limit(tokens) {
            return Paces::Never;
        }
        let ahead = !redeem;
        let wait = [
            paced.requests.wait_for(now, 1.0, ahead),
            paced.tokens.wait_for(now, tokens, ahead),
            paced.learner.bucket().wait_for(now, 1.0, ahead),
        ]
        .into_iter()
        .max()
        .unwrap_or(Duration::ZERO);
        if wait.is_zero() && ask == Ask::Peek {
            return Paces::Go;
        }
        if wait.is_zero() {
            paced.requests.debit(now, 1.0);
            paced.tokens.debit(now, tokens);
            paced.learner.sent(now);
            paced.sent_tokens = paced.sent_tokens.saturating_add(tokens as u64);
            let seq = self.sent.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            let at = paced.sent_tokens;
            paced.tokens_at[seq as usize % KEPT] = at;
            self.grant(&mut paced, now, false);
            return Paces::Go;
        }
        let until = crate::clock::later(now, wait);
        if matches!(ask, Ask::Try | Ask::Peek) {
            return Paces::Wait(until);
        }
        paced.requests.reserve(1.0);
        paced.tokens.reserve(tokens);
        paced.learner.reserve(1.0);
        Paces::Wait(until)
    }

    /// A waiting attempt gave up its reservation of `tokens` (dropped, cancelled, or its wait
    /// did not fit the call).
    pub(crate) fn release(&self, tokens: u32) {
        self.lock().unreserve(f64::from(tokens));
    }

    /// An answer to the send numbered `seq` said this of the key, at `now`. Returns whether
    /// the pacer was off until now (the upstream's word must say it paces).
    pub(crate) fn said(&self, said: RateSaid, seq: u32, now: Instant) -> bool {
        let mut paced = self.lock();
        let was_on = paced.requests.is_known() || paced.tokens.is_known();
        // Wrapping: a report is older if its send came before the freshest applied.
        if was_on && (seq.wrapping_sub(paced.applied) as i32) < 0 {
            return false;
        }
        paced.applied = seq;
        let sent = self.sent.load(Ordering::Relaxed);
        let share = paced.share;
        if let Some(left) = said.requests {
            let since = f64::from(sent.wrapping_sub(seq));
            paced.requests.said(left, since, share, now);
        }
        if let Some(left) = said.tokens {
            let since = if sent.wrapping_sub(seq) as usize >= KEPT {
                paced
                    .sent_tokens
                    .saturating_sub(paced.tokens_at[sent as usize % KEPT])
            } else {
                paced.sent_tokens - paced.tokens_at[seq as usize % KEPT].min(paced.sent_tokens)
            };
            paced.tokens.said(left, since as f64, share, now);
        }
        // The headers are the truth: a rate learned from refusals gives way to them.
        paced.learner.off();
        self.grant(&mut paced, now, true);
        !was_on && !said.is_empty()
    }

    /// An answer that said nothing of the key came at `now`: measured, for a rate learned
    /// from refusals.
    pub(crate) fn answered(&self, now: Instant) {
        self.lock().learner.answered(now);
    }

    /// A refusal with nothing said (no headers, no hint) at `now`: the learned rate is cut.
    /// Returns whether it was off until now.
    pub(crate) fn refused(&self, now: Instant) -> bool {
        let mut paced = self.lock();
        if paced.requests.is_known() || paced.tokens.is_known() {
            return false;
        }
        let was_off = paced.learner.throttled(now);
        // A learned rate is one send at a time: no credit.
        self.grant(&mut paced, now, false);
        was_off
    }

    /// An attempt succeeded at `now`: a learned rate climbs back.
    pub(crate) fn succeeded(&self, now: Instant) {
        let mut paced = self.lock();
        if paced.learner.is_on() {
            paced.learner.succeeded(now);
        }
    }

    /// This process's part of the key, `1/members`: the fleet's processes sharing it each pace
    /// on their slice of what the headers say is left.
    pub(crate) fn share_among(&self, members: u32) {
        self.lock().share = 1.0 / f64::from(members.max(1));
    }

    /// The rate the pacer holds the key to, per second, where it knows one: the requests'
    /// (said, or learned).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) fn rate(&self) -> Option<f64> {
        let paced = self.lock();
        paced
            .requests
            .rate()
            .or_else(|| paced.learner.is_on().then(|| paced.learner.rate()))
    }

    /// Forget everything: a test's reset.
    pub(crate) fn reset(&self) {
        let mut paced = self.lock();
        let share = paced.share;
        *paced = Paced {
            share,
            ..Pacer::new()
                .state
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner)
        };
    }
}

impl Paced {
    fn unreserve(&mut self, tokens: f64) {
        self.requests.unreserve(1.0);
        self.tokens.unreserve(tokens);
        self.learner.unreserve(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn left(limit: u64, remaining: u64, reset_ms: u64) -> RateLeft {
        RateLeft {
            limit: Some(limit),
            remaining,
            reset: Some(Duration::from_millis(reset_ms)),
        }
    }

    fn requests(limit: u64, remaining: u64, reset_ms: u64) -> RateSaid {
        RateSaid {
            requests: Some(left(limit, remaining, reset_ms)),
            tokens: None,
        }
    }

    /// A key of 10 a second with 2 left: two go, the third waits a tenth of a second, and a
    /// fourth behind it two tenths.
    #[test]
    fn what_is_left_goes_and_the_rest_waits_in_turn() {
        let pacer = Pacer::new();
        let now = Instant::now();
        assert!(pacer.said(requests(10, 2, 800), 0, now));
        assert_eq!(pacer.take(now, 0, Ask::Reserve), Paces::Go);
        assert_eq!(pacer.take(now, 0, Ask::Reserve), Paces::Go);
        let ms = Duration::from_millis;
        assert_eq!(pacer.take(now, 0, Ask::Reserve), Paces::Wait(now + ms(100)));
        assert_eq!(pacer.take(now, 0, Ask::Reserve), Paces::Wait(now + ms(200)));
        // A try reserves nothing: it sees the same queue.
        assert_eq!(pacer.take(now, 0, Ask::Try), Paces::Wait(now + ms(300)));
        // The first waiter redeems its slot at its time.
        assert_eq!(pacer.take(now + ms(100), 0, Ask::Redeem), Paces::Go);
        // A dropped waiter gives its slot back: the next new call waits as long as it did.
        pacer.release(0);
        assert_eq!(
            pacer.take(now + ms(100), 0, Ask::Reserve),
            Paces::Wait(now + ms(200))
        );
    }

    /// A report is corrected by what this process sent after the request it answers, and an
    /// older report than one applied is not applied.
    #[test]
    fn a_report_counts_what_was_sent_since_its_request() {
        let pacer = Pacer::new();
        let now = Instant::now();
        pacer.said(requests(10, 5, 500), 0, now);
        for _ in 0..3 {
            assert_eq!(pacer.take(now, 0, Ask::Reserve), Paces::Go);
        }
        // The answer to the first send says 4 left: two were sent after it, 2 are left.
        pacer.said(requests(10, 4, 600), 1, now);
        assert_eq!(pacer.take(now, 0, Ask::Reserve), Paces::Go);
        assert_eq!(pacer.take(now, 0, Ask::Reserve), Paces::Go);
        assert!(matches!(pacer.take(now, 0, Ask::Reserve), Paces::Wait(_)));
        // The answer to the first send again (late, reordered): not applied.
        assert!(!pacer.said(requests(10, 9, 100), 0, now));
    }

    /// A roomy key grants credit: half of what is left goes with no lock, then the lock's
    /// path grants again from what is left; never more than the key has.
    #[test]
    fn credit_is_half_of_the_room_and_never_more_than_the_key_has() {
        let pacer = Pacer::new();
        let now = Instant::now();
        pacer.said(requests(100, 100, 1_000), 0, now);
        let on_credit = (0..100).take_while(|_| pacer.take_credit()).count();
        assert_eq!(on_credit, 50);
        let mut sent = on_credit;
        while pacer.take(now, 0, Ask::Reserve) == Paces::Go {
            sent += 1 + (0..100).take_while(|_| pacer.take_credit()).count();
        }
        assert_eq!(sent, 100, "the key's hundred, and not one more");
        assert_eq!(pacer.sent(), 100);
    }

    /// Tokens: a call costs its tokens and waits for them; one larger than the limit never goes.
    #[test]
    fn tokens_are_taken_and_a_call_past_the_limit_never_goes() {
        let pacer = Pacer::new();
        let now = Instant::now();
        let said = RateSaid {
            requests: Some(left(100, 100, 0)),
            tokens: Some(left(1_000, 500, 500)),
        };
        pacer.said(said, 0, now);
        assert_eq!(pacer.take(now, 400, Ask::Reserve), Paces::Go);
        // 100 left, refilling at 1,000 a second: 300 more in 0.3 s.
        let wait = Duration::from_millis(300);
        assert_eq!(pacer.take(now, 400, Ask::Reserve), Paces::Wait(now + wait));
        assert_eq!(pacer.take(now, 1_001, Ask::Reserve), Paces::Never);
    }

    /// Silent refusals turn the learned rate on, cut it, and successes climb it back.
    #[test]
    fn a_silent_key_is_learned_from_its_refusals() {
        let pacer = Pacer::new();
        let start = Instant::now();
        for at in 0..40 {
            pacer.answered(start + Duration::from_millis(at * 50));
        }
        let refused = start + Duration::from_secs(2);
        assert!(pacer.refused(refused));
        let cut = pacer.rate().expect("a learned rate");
        assert!((10.0..=15.0).contains(&cut), "{cut}");
        pacer.succeeded(refused + Duration::from_secs(4));
        let climbed = pacer.rate().expect("a learned rate");
        assert!(climbed > cut, "{climbed} after {cut}");
        // Headers heard: they are the truth, the learned rate gives way.
        pacer.said(requests(10, 10, 0), 40, refused + Duration::from_secs(4));
        assert_eq!(pacer.rate(), None);
    }
}
