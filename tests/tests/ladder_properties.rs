//! Properties of the ladder and the loop, for every built-in policy and arbitrary ones.
//!
//! Arbitrary policies take any number of attempts (0 and `u32::MAX` included), a base and a
//! cap anywhere up to `Duration::MAX`, any multiplier (NaN, infinities and negatives
//! included), every jitter, either rate-limit rule and any set of retried classes. Retry
//! numbers and draws (`Draw::from_bits`) are arbitrary too. Nothing may panic or overflow.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::select;
use retry_runtime::ladder::{self, Decided, Failure, Step, Why};
use retry_runtime::{Class, Classify, Draw, Jitter, Policy, RateLimit, Retry, StopReason, testing};

const MAX_NANOS: u128 = Duration::MAX.as_nanos();

/// How many rungs a property walks one by one; past that, only flat ladders are summed.
const RUNGS: u32 = 64;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 10_000,
        // The suite keeps no regression files; a failure prints its minimal case.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        Just(Duration::from_nanos(1)),
        Just(Duration::MAX),
        Just(Duration::from_millis(250)),
        (0u64..=200_000_000_000).prop_map(Duration::from_nanos),
        (any::<u64>(), 0u32..1_000_000_000).prop_map(|(secs, nanos)| Duration::new(secs, nanos)),
    ]
}

fn attempts() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0), Just(1), Just(u32::MAX), 0u32..12, any::<u32>()]
}

fn multiplier() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MAX),
        Just(-2.0),
        Just(0.0),
        Just(0.5),
        Just(1.0),
        Just(1.001),
        Just(1.6),
        Just(2.0),
        Just(3.0),
        0.0f64..10.0,
        any::<u64>().prop_map(f64::from_bits),
    ]
}

fn jitter() -> impl Strategy<Value = Jitter> {
    select(vec![
        Jitter::Proportional,
        Jitter::Equal,
        Jitter::Full,
        Jitter::Above,
        Jitter::None,
    ])
}

fn rate_limit() -> impl Strategy<Value = RateLimit> {
    prop_oneof![
        Just(RateLimit::Ladder),
        duration().prop_map(|wait| RateLimit::Once { wait }),
    ]
}

/// A policy from scratch: every setting arbitrary, and any set of retried classes.
fn arbitrary_policy() -> impl Strategy<Value = Policy> {
    (
        (attempts(), duration(), duration(), multiplier()),
        (jitter(), rate_limit(), duration(), any::<u16>()),
        prop_oneof![Just(Duration::MAX), duration()],
    )
        .prop_map(
            |(
                (attempts, base, cap, multiplier),
                (jitter, rate_limit, max_hint, retried),
                total,
            )| {
                let mut policy = Policy::new("arbitrary")
                    .with_attempts(attempts)
                    .with_base(base)
                    .with_cap(cap)
                    .with_multiplier(multiplier)
                    .with_jitter(jitter)
                    .with_rate_limit(rate_limit)
                    .with_max_retry_after(max_hint)
                    .with_max_total_wait(total);
                for (bit, &class) in Class::ALL.iter().enumerate() {
                    policy = if retried & (1 << bit) != 0 {
                        policy.retrying(class)
                    } else {
                        policy.not_retrying(class)
                    };
                }
                policy
            },
        )
}

/// Every built-in policy, and arbitrary ones.
fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        1 => Just(Policy::AVAILABILITY),
        1 => Just(Policy::OUTAGE),
        1 => Just(Policy::TRANSIENT),
        6 => arbitrary_policy(),
    ]
}

fn draw() -> impl Strategy<Value = Draw> {
    prop_oneof![
        Just(Draw::IDEAL),
        Just(Draw::from_bits(0)),
        Just(Draw::from_bits(1 << 31)),
        Just(Draw::from_bits(u32::MAX)),
        any::<u32>().prop_map(Draw::from_bits),
    ]
}

fn retry_number() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0), Just(1), Just(u32::MAX), 1u32..100, any::<u32>()]
}

/// Any class; a rate limit with or without a `Retry-After` hint.
fn class() -> impl Strategy<Value = Class> {
    prop_oneof![
        select(Class::ALL.to_vec()),
        proptest::option::of(duration()).prop_map(|retry_after| Class::RateLimited { retry_after }),
    ]
}

/// Any failure: the facts of the run as well as its class, the rarer ones (a nested give-up,
/// a turn over, output delivered) now and then, so most cases reach the wait.
fn failure() -> impl Strategy<Value = Failure> {
    let rarely = || proptest::bool::weighted(0.1);
    (
        (retry_number(), class(), any::<bool>()),
        proptest::option::of(duration()),
        (rarely(), rarely(), rarely(), any::<bool>()),
    )
        .prop_map(
            |(
                (attempt, class, rate_limited_before),
                remaining,
                (inner_gave_up, turn_over, committed, restartable),
            )| {
                Failure::new(attempt, class)
                    .with_rate_limited_before(rate_limited_before)
                    .with_remaining(remaining)
                    .with_inner_gave_up(inner_gave_up)
                    .with_turn_over(turn_over)
                    .with_committed(committed, restartable)
            },
        )
}

/// The engine's step for `failure` at `draw`: the one decision, with the draw if it takes one.
fn step(policy: &Policy, failure: Failure, draw: Draw) -> Step {
    ladder::decide(policy, failure).with_draw(draw).step
}

/// Rung `retry`'s wait at `draw`, from the public arithmetic alone.
fn rung_wait(policy: &Policy, retry: u32, draw: Draw) -> Duration {
    ladder::jittered(ladder::ideal_wait(policy, retry), policy.jitter(), draw)
}

/// A single rate-limit retry has a wait of its own (seed 001's 20 s), which the worst case must
/// also cover: there, the rungs are a lower bound.
fn own_rate_limit_wait(policy: &Policy) -> bool {
    matches!(policy.rate_limit(), RateLimit::Once { .. })
        && policy.retries(&Class::RateLimited { retry_after: None })
}

fn nanos(duration: Duration) -> u128 {
    duration.as_nanos()
}

/// The attempts a policy allows: 0 behaves as 1.
fn allowed(policy: &Policy) -> u32 {
    policy.attempts().max(1)
}

// ---- the ladder: pure arithmetic ----

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_ideal_wait_never_exceeds_the_cap(policy in policy(), retry in retry_number()) {
        prop_assert!(ladder::ideal_wait(&policy, retry) <= policy.cap());
    }

    #[test]
    fn the_ideal_wait_never_shrinks_from_one_retry_to_the_next(
        policy in policy(),
        retry in retry_number(),
    ) {
        let retry = retry.min(u32::MAX - 1);
        prop_assert!(ladder::ideal_wait(&policy, retry) <= ladder::ideal_wait(&policy, retry + 1));
    }

    #[test]
    fn a_jittered_wait_stays_within_its_jitters_bounds(
        ideal in duration(),
        jitter in jitter(),
        bits in any::<u32>(),
    ) {
        let wait = nanos(ladder::jittered(ideal, jitter, Draw::from_bits(bits)));
        let ideal = nanos(ideal);
        let (low, high) = (
            u128::from(jitter.min_factor_percent()),
            u128::from(jitter.max_factor_percent()),
        );
        prop_assert!(wait >= ideal * low / 100, "{wait} below {low}% of {ideal}");
        if jitter == Jitter::None {
            prop_assert_eq!(wait, ideal);
        } else if ideal == 0 {
            prop_assert_eq!(wait, 0);
        } else {
            prop_assert!(wait * 100 < ideal * high, "{wait} not below {high}% of {ideal}");
        }
    }

    #[test]
    fn without_jitter_or_without_a_draw_a_wait_is_its_ideal(
        ideal in duration(),
        jitter in jitter(),
        draw in draw(),
    ) {
        prop_assert_eq!(ladder::jittered(ideal, Jitter::None, draw), ideal);
        prop_assert_eq!(ladder::jittered(ideal, jitter, Draw::IDEAL), ideal);
    }

    #[test]
    fn a_ladder_wait_never_exceeds_the_longest_wait_of_its_rung(
        policy in policy(),
        retry in retry_number(),
        draw in draw(),
    ) {
        prop_assert!(rung_wait(&policy, retry, draw) <= ladder::max_wait(&policy, retry));
    }

    #[test]
    fn the_worst_case_covers_the_waits_of_any_draws(
        policy in policy(),
        draws in proptest::collection::vec(any::<u32>(), RUNGS as usize),
    ) {
        let retries = policy.attempts().saturating_sub(1).min(RUNGS);
        let waited = (1..=retries)
            .map(|retry| nanos(rung_wait(&policy, retry, Draw::from_bits(draws[retry as usize - 1]))))
            .fold(0u128, |sum, wait| sum.saturating_add(wait).min(MAX_NANOS));
        // The engine never waits past the policy's total: the worst case is bounded by it too.
        prop_assert!(waited.min(nanos(policy.max_total_wait())) <= nanos(policy.worst_case_wait()));
    }

    #[test]
    fn the_worst_case_is_the_sum_of_the_rungs_longest_waits(policy in policy()) {
        let retries = policy.attempts().saturating_sub(1);
        let walked = (1..=retries.min(RUNGS))
            .map(|retry| nanos(ladder::max_wait(&policy, retry)))
            .fold(0u128, |sum, wait| sum.saturating_add(wait).min(MAX_NANOS));
        let worst = nanos(policy.worst_case_wait());
        let total = nanos(policy.max_total_wait());
        if worst == total {
            // The policy's total binds: the rungs reach at least that far.
            prop_assert!(walked >= total || retries > RUNGS || own_rate_limit_wait(&policy));
            return Ok(());
        }
        let flat = ladder::ideal_wait(&policy, RUNGS) == ladder::ideal_wait(&policy, RUNGS + 1);
        if own_rate_limit_wait(&policy) {
            prop_assert!(worst >= walked);
        } else if retries <= RUNGS {
            prop_assert_eq!(worst, walked);
        } else if flat {
            let rest = u128::from(retries - RUNGS)
                .saturating_mul(nanos(ladder::max_wait(&policy, RUNGS + 1)));
            prop_assert_eq!(worst, walked.saturating_add(rest).min(MAX_NANOS));
        } else {
            prop_assert!(worst >= walked);
        }
    }

    #[test]
    fn the_decision_never_retries_past_the_attempts_the_policy_allows(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        if let Step::Retry { .. } = step(&policy, failure, draw) {
            prop_assert!(failure.attempt < allowed(&policy));
        }
    }

    #[test]
    fn the_decision_never_retries_a_definitive_failure(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        // A stream past its commit point stops first, with `Committed` (its own property).
        let failure = failure.with_class(Class::Definitive).with_committed(false, false);
        prop_assert_eq!(
            step(&policy, failure, draw),
            Step::Stop(StopReason::Definitive),
            "{:?} retries an answer", policy
        );
    }

    #[test]
    fn the_decision_never_retries_a_cancelled_failure(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        // A cancelled failure is transient: a nested give-up would stop it first (`Nested`), as
        // a commit would (`Committed`).
        let failure = failure
            .with_class(Class::Cancelled)
            .with_inner_gave_up(false)
            .with_committed(false, false);
        prop_assert_eq!(
            step(&policy, failure, draw),
            Step::Stop(StopReason::Cancelled)
        );
    }

    #[test]
    fn the_decision_never_retries_a_class_the_policy_does_not_retry(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        if !policy.retries(&failure.class) {
            prop_assert!(matches!(step(&policy, failure, draw), Step::Stop(_)));
        }
    }

    #[test]
    fn the_decision_never_waits_longer_than_the_budget_remaining(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        if let (Step::Retry { wait }, Some(remaining)) =
            (step(&policy, failure, draw), failure.remaining)
        {
            prop_assert!(wait <= remaining);
        }
    }

    #[test]
    fn the_decision_retries_a_rate_limit_only_once_where_the_policy_says_once(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        let once = matches!(policy.rate_limit(), RateLimit::Once { .. });
        let again = failure.rate_limited_before && matches!(failure.class, Class::RateLimited { .. });
        if once && again {
            prop_assert!(matches!(step(&policy, failure, draw), Step::Stop(_)));
        }
    }

    #[test]
    fn a_retry_after_is_a_floor_that_the_policys_maximum_bounds(
        policy in policy(),
        failure in failure(),
        hint in duration(),
        draw in draw(),
    ) {
        let failure = failure.with_class(Class::RateLimited { retry_after: Some(hint) });
        match step(&policy, failure, draw) {
            Step::Retry { wait } => {
                prop_assert!(wait >= hint);
                prop_assert!(hint <= policy.max_retry_after());
            }
            Step::Stop(StopReason::RetryAfterTooLong { wanted, max }) => {
                prop_assert_eq!(wanted, hint);
                // Longer than the policy honours at all, or (with its spread) than what the
                // policy's total has left.
                prop_assert!(
                    (max == policy.max_retry_after() && hint > max)
                        || max <= policy.max_total_wait()
                );
            }
            _ => {}
        }
    }
}

// ---- the decision: its draw, its own wait, and a stream's commit ----

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_decision_made_without_a_draw_is_a_stop_with_no_own_wait(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        match ladder::decide(&policy, failure) {
            Decided::Stop(decision) => {
                prop_assert!(matches!(decision.step, Step::Stop(_)));
                prop_assert_eq!(decision.own_wait, None);
            }
            Decided::Pending(pending) => {
                prop_assert!(pending.with_draw(draw).own_wait.is_some());
            }
            Decided::Move(_) => prop_assert!(false, "no upstream was ready, yet it moved"),
        }
    }

    /// A move is the ladder's decision: with another upstream ready, the call moves at once
    /// whatever the class, the hint or the output, unless its attempts are spent, its turn
    /// is over or its budget reached.
    #[test]
    fn with_another_upstream_ready_only_the_attempts_the_turn_and_the_budget_stop_a_move(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        let decided = ladder::decide(&policy, failure.with_another_ready(true));
        let allowed = policy.attempts().clamp(1, Policy::MAX_ATTEMPTS);
        let expected = if failure.attempt >= allowed {
            Step::Stop(StopReason::Exhausted { attempts: allowed })
        } else if failure.turn_over {
            Step::Stop(StopReason::Cancelled)
        } else if failure.remaining == Some(Duration::ZERO) {
            Step::Stop(StopReason::Budget { wanted: Duration::ZERO, remaining: Duration::ZERO })
        } else {
            Step::Retry { wait: Duration::ZERO }
        };
        prop_assert_eq!(decided.with_draw(draw).step, expected);
        prop_assert_eq!(matches!(decided, Decided::Move(_)), expected.wait().is_some());
        prop_assert!(!decided.needs_draw());
    }

    #[test]
    fn the_own_wait_is_the_rung_jittered_or_the_single_rate_limit_wait_spread(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        let expected = match (failure.class, policy.rate_limit()) {
            (Class::RateLimited { .. }, RateLimit::Once { wait }) => ladder::hinted(wait, draw),
            _ => rung_wait(&policy, failure.attempt, draw),
        };
        if let Decided::Pending(pending) = ladder::decide(&policy, failure) {
            prop_assert_eq!(pending.with_draw(draw).own_wait, Some(expected));
        }
    }

    #[test]
    fn a_nested_give_up_stops_every_transient_failure_without_a_draw(
        policy in policy(),
        failure in failure(),
    ) {
        // Uncommitted: a stream past its commit point stops first, with `Committed`.
        let failure = failure.with_inner_gave_up(true).with_committed(false, false);
        let decided = ladder::decide(&policy, failure);
        if failure.class.is_transient() {
            let Decided::Stop(decision) = decided else {
                return Err(TestCaseError::fail("a nested give-up asked for a draw"));
            };
            prop_assert_eq!(decision.step, Step::Stop(StopReason::Nested));
            prop_assert_eq!(decision.rule, Why::Nested);
        }
    }

    #[test]
    fn a_failure_in_a_turn_that_is_over_is_never_retried_and_draws_nothing(
        policy in policy(),
        failure in failure(),
    ) {
        let decided = ladder::decide(&policy, failure.with_turn_over(true));
        prop_assert!(!decided.needs_draw(), "{:?}", decided);
    }

    #[test]
    fn a_committed_failure_stops_with_committed_whatever_else_is_true(
        policy in policy(),
        failure in failure(),
    ) {
        let failure = failure.with_committed(true, false);
        let Decided::Stop(decision) = ladder::decide(&policy, failure) else {
            return Err(TestCaseError::fail("a committed failure asked for a draw"));
        };
        // Before the nesting and the class rules: any retry would repeat delivered output.
        prop_assert_eq!(decision.step, Step::Stop(StopReason::Committed));
        prop_assert_eq!(decision.rule, Why::Committed);
    }

    #[test]
    fn a_restartable_committed_failure_is_decided_as_one_that_delivered_nothing(
        policy in policy(),
        failure in failure(),
        draw in draw(),
    ) {
        let fresh = ladder::decide(&policy, failure.with_committed(false, false));
        let restarted = ladder::decide(&policy, failure.with_committed(true, true));
        prop_assert_eq!(restarted, fresh);
        prop_assert_eq!(restarted.with_draw(draw), fresh.with_draw(draw));
        // Restarts asked for on a stream that never committed change nothing either.
        prop_assert_eq!(ladder::decide(&policy, failure.with_committed(false, true)), fresh);
    }
}

#[test]
fn a_committed_answer_stops_with_committed() {
    let failure = Failure::new(1, Class::Definitive).with_committed(true, false);
    let decision = ladder::decide(&Policy::AVAILABILITY, failure).with_draw(Draw::IDEAL);
    assert_eq!(decision.step, Step::Stop(StopReason::Committed));
    assert_eq!(decision.rule, Why::Committed);
}

#[test]
fn a_committed_transient_failure_stops_with_committed_even_on_its_last_attempt() {
    let failure = Failure::new(4, Class::Transport).with_committed(true, false);
    let decision = ladder::decide(&Policy::AVAILABILITY, failure).with_draw(Draw::IDEAL);
    assert_eq!(decision.step, Step::Stop(StopReason::Committed));
    assert_eq!(decision.rule, Why::Committed);
}

// ---- the loop: `Retry::run` in a testing scope ----

/// The error of attempt `attempt`, of class `class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tagged {
    attempt: u32,
    class: Class,
}

impl Classify for Tagged {
    fn classify(&self) -> Class {
        self.class
    }
}

impl fmt::Display for Tagged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "attempt {} failed: {}", self.attempt, self.class)
    }
}

/// What one run did.
#[derive(Debug)]
struct Ran {
    calls: u32,
    result: Result<u32, retry_runtime::GaveUp<Tagged>>,
    waits: Vec<Duration>,
}

thread_local! {
    static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

fn block_on<F: Future>(future: F) -> F::Output {
    RUNTIME.with(|runtime| {
        runtime
            .borrow_mut()
            .get_or_insert_with(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .expect("build a current-thread runtime")
            })
            .block_on(future)
    })
}

/// Run `policy` against an operation that fails with `classes`, in order, then succeeds.
fn run(policy: &Policy, classes: &[Class], draw: Draw) -> Ran {
    // `Retry` takes a `&'static Policy`; a generated one is leaked (112 bytes a case).
    let policy: &'static Policy = Box::leak(Box::new(*policy));
    let mut calls = 0;
    let (result, recorded) = block_on(testing::scope_with_draw(
        draw,
        Retry::new(policy).run(async |attempt| {
            calls += 1;
            assert_eq!(attempt, calls, "attempts are numbered from 1, in order");
            match classes.get(attempt as usize - 1) {
                Some(&class) => Err(Tagged { attempt, class }),
                None => Ok(attempt),
            }
        }),
    ));
    Ran {
        calls,
        result,
        waits: recorded.waits().to_vec(),
    }
}

/// Whether the engine may retry `class` under `policy`, by the policy's own set.
fn retried(policy: &Policy, class: &Class) -> bool {
    policy.retries(class) && !matches!(class, Class::Cancelled)
}

fn classes() -> impl Strategy<Value = Vec<Class>> {
    proptest::collection::vec(class(), 0..12)
}

/// Classes without a rate limit: the ladder's own waits, no hint and no rate-limit rule.
fn unhinted_classes() -> impl Strategy<Value = Vec<Class>> {
    proptest::collection::vec(
        select(
            Class::ALL
                .iter()
                .copied()
                .filter(|class| !matches!(class, Class::RateLimited { .. }))
                .collect::<Vec<_>>(),
        ),
        0..12,
    )
}

/// Classes with rate limits that carry no `Retry-After`: the policy's own numbers only.
fn hintless_classes() -> impl Strategy<Value = Vec<Class>> {
    proptest::collection::vec(select(Class::ALL.to_vec()), 0..12)
}

fn total(waits: &[Duration]) -> u128 {
    waits.iter().fold(0u128, |sum, wait| {
        sum.saturating_add(nanos(*wait)).min(MAX_NANOS)
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_run_never_makes_more_attempts_than_the_policy_allows(
        policy in policy(),
        classes in classes(),
        draw in draw(),
    ) {
        let ran = run(&policy, &classes, draw);
        prop_assert!(ran.calls >= 1);
        prop_assert!(ran.calls <= allowed(&policy));
        prop_assert!(ran.calls as usize <= classes.len() + 1);
        prop_assert_eq!(ran.waits.len() as u32, ran.calls - 1);
        match &ran.result {
            Ok(attempt) => prop_assert_eq!(*attempt, ran.calls),
            Err(gave_up) => prop_assert_eq!(gave_up.attempts(), ran.calls),
        }
    }

    #[test]
    fn a_run_stops_on_the_first_failure_its_policy_does_not_retry(
        policy in policy(),
        classes in classes(),
        draw in draw(),
    ) {
        let ran = run(&policy, &classes, draw);
        if let Some(first) = classes.iter().position(|class| !retried(&policy, class)) {
            prop_assert!(ran.calls as usize <= first + 1);
            if ran.calls as usize == first + 1 {
                let gave_up = ran.result.as_ref().expect_err("a class not retried ends the run");
                prop_assert!(matches!(
                    gave_up.reason(),
                    StopReason::Definitive | StopReason::NotRetried { .. } | StopReason::Cancelled
                ), "{:?}", gave_up.reason());
            }
        }
    }

    #[test]
    fn a_run_returns_the_last_error_unchanged(
        policy in policy(),
        classes in classes(),
        draw in draw(),
    ) {
        let ran = run(&policy, &classes, draw);
        if let Err(gave_up) = ran.result {
            let last = ran.calls as usize - 1;
            prop_assert_eq!(gave_up.class(), classes[last]);
            prop_assert_eq!(gave_up.is_undetermined(), classes[last] != Class::Definitive);
            prop_assert_eq!(
                gave_up.into_error(),
                Tagged { attempt: ran.calls, class: classes[last] }
            );
        } else {
            prop_assert_eq!(ran.calls as usize, classes.len() + 1);
        }
    }

    #[test]
    fn a_run_follows_the_ladder_step_by_step(
        policy in policy(),
        classes in classes(),
        draw in draw(),
    ) {
        let ran = run(&policy, &classes, draw);
        let mut rate_limited_before = false;
        let mut waited = Duration::ZERO;
        let mut expected = Vec::new();
        for (index, class) in classes.iter().enumerate() {
            let failure = Failure::new(index as u32 + 1, *class)
                .with_rate_limited_before(rate_limited_before)
                .with_waited(waited);
            match step(&policy, failure, draw) {
                Step::Retry { wait } => {
                    expected.push(wait);
                    // The engine keeps the time waited in whole milliseconds, rounded up.
                    waited += Duration::from_millis(wait.as_nanos().div_ceil(1_000_000) as u64);
                }
                step => {
                    let gave_up = ran.result.as_ref().expect_err("the ladder stopped");
                    prop_assert_eq!(Some(gave_up.reason()), step.stop_reason());
                    break;
                }
            }
            rate_limited_before |= matches!(class, Class::RateLimited { .. });
        }
        prop_assert_eq!(&ran.waits, &expected);
        prop_assert_eq!(ran.calls as usize, expected.len() + 1);
    }

    #[test]
    fn a_run_waits_no_longer_than_the_worst_case(
        policy in policy(),
        classes in unhinted_classes(),
        draw in draw(),
    ) {
        let ran = run(&policy, &classes, draw);
        prop_assert!(total(&ran.waits) <= nanos(policy.worst_case_wait()));
    }

    #[test]
    fn a_run_with_rate_limits_but_no_retry_after_waits_no_longer_than_the_worst_case(
        policy in policy(),
        classes in hintless_classes(),
        draw in draw(),
    ) {
        let ran = run(&policy, &classes, draw);
        prop_assert!(
            total(&ran.waits) <= nanos(policy.worst_case_wait()),
            "waited {:?} ({:?}), worst case {:?}",
            ran.waits, classes, policy.worst_case_wait()
        );
    }
}

// ---- figures kept exact ----

#[test]
fn every_three_decimal_multiplier_from_1_to_10_is_kept_exactly() {
    for milli in 1000..=10_000u32 {
        let multiplier = f64::from(milli) / 1000.0;
        assert_eq!(
            Policy::AVAILABILITY
                .with_multiplier(multiplier)
                .multiplier_milli(),
            milli,
            "{multiplier}"
        );
    }
}

#[test]
fn attempts_stop_exactly_at_their_documented_maximum() {
    let policy = Policy::AVAILABILITY.with_attempts(u32::MAX);
    assert_eq!(
        policy.check(),
        Err(retry_runtime::PolicyError::TooManyAttempts)
    );
    assert_eq!(
        Policy::AVAILABILITY
            .with_attempts(Policy::MAX_ATTEMPTS)
            .with_max_total_wait(Duration::MAX)
            .with_base(Duration::from_nanos(1))
            .with_cap(Duration::from_nanos(1))
            .with_max_retry_after(Duration::ZERO)
            .check(),
        Ok(())
    );
    // An unchecked policy that asks for more makes the most a policy may, and says so exactly.
    let at_most = Policy::MAX_ATTEMPTS;
    let class = Class::Unavailable { retry_after: None };
    assert!(ladder::decide(&policy, Failure::new(at_most - 1, class)).needs_draw());
    let Decided::Stop(last) = ladder::decide(&policy, Failure::new(at_most, class)) else {
        panic!("the last attempt is not retried");
    };
    assert_eq!(
        last.step,
        Step::Stop(StopReason::Exhausted { attempts: at_most })
    );
    assert_eq!(last.rule, Why::Attempts);
}

#[test]
fn the_time_waited_stops_exactly_at_its_documented_maximum() {
    // The most attempts a policy may make, an hour apart: far past the 49.7 days.
    let policy = Policy::TRANSIENT
        .with_attempts(Policy::MAX_ATTEMPTS)
        .with_cap(Duration::from_secs(3600))
        .with_jitter(Jitter::None);
    assert_eq!(
        policy.check(),
        Err(retry_runtime::PolicyError::WaitsTooLong)
    );
    // Even unchecked, no wait takes the ladder past `MAX_TOTAL_WAIT`, so `waited` is exact.
    let almost = Policy::MAX_TOTAL_WAIT - Duration::from_millis(500);
    let failure = Failure::new(10, Class::Transport).with_waited(almost);
    assert_eq!(
        step(&policy, failure, Draw::IDEAL),
        Step::Stop(StopReason::Budget {
            wanted: Duration::from_secs(512),
            remaining: Duration::from_millis(500),
        })
    );
}

proptest! {
    #![proptest_config(config())]

    /// Issue 22: a hint that fits (no longer than the policy's `max_retry_after`, what is left
    /// of its total allowance and of the budget) is taken under every draw, with a wait no
    /// shorter than the hint and no longer than the room left; never refused for its spread.
    #[test]
    fn every_hint_that_fits_is_taken_under_every_draw(
        policy in select(vec![Policy::AVAILABILITY, Policy::OUTAGE, Policy::TRANSIENT]),
        bits in any::<u32>(),
        hint_share in any::<u32>(),
        waited_nanos in 0u64..=18_000_000_000,
        remaining_nanos in proptest::option::of(0u64..=200_000_000_000),
        rate_limited in any::<bool>(),
    ) {
        let draw = Draw::from_bits(bits);
        let waited = Duration::from_nanos(waited_nanos);
        let remaining = remaining_nanos.map(Duration::from_nanos);
        let allowance = policy.max_total_wait().min(Policy::MAX_TOTAL_WAIT).saturating_sub(waited);
        // A wait ends strictly before the deadline, on the timer's millisecond (issue 56's
        // item 18): the budget's room is what is left less that millisecond.
        let granularity = Duration::from_millis(1);
        let room = remaining.map_or(allowance, |remaining| {
            remaining.saturating_sub(granularity).min(allowance)
        });
        // Any hint up to the room left and the policy's longest, the very limit included.
        let limit = room.min(policy.max_retry_after());
        let share = u128::from(hint_share) * limit.as_nanos() / u128::from(u32::MAX);
        let hint = Duration::from_nanos(u64::try_from(share).unwrap_or(u64::MAX).max(1));
        let with_hint = |retry_after| if rate_limited {
            Class::RateLimited { retry_after }
        } else {
            Class::Unavailable { retry_after }
        };
        let class = with_hint(Some(hint));
        // The policy's own wait for this failure, with the same draw: a hint is a floor under it.
        let own = match step(&policy, Failure::new(1, with_hint(None)), draw) {
            Step::Retry { wait } => wait,
            _ => return Ok(()),
        };
        prop_assume!(hint <= limit && own <= room && !room.is_zero());
        let failure = Failure::new(1, class).with_waited(waited).with_remaining(remaining);
        match step(&policy, failure, draw) {
            Step::Retry { wait } => {
                prop_assert!(wait >= hint, "{wait:?} < {hint:?}");
                prop_assert!(wait <= room, "{wait:?} > {room:?}");
            }
            step => prop_assert!(false, "a hint of {hint:?} that fits {room:?} was refused: {step:?}"),
        }
    }
}
