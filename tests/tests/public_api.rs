//! The public surface, named item by item, each by its one path: a change to it fails to
//! compile here, so it is never made unseen. (Issue 14.)

#![allow(unused_imports)]

// The root: what a user writes.
use retry_runtime::{
    Budget, Canceller, Class, ClassSet, Classify, Clock, DEFAULT_HOLD_BYTES, DEFAULT_HOLD_ITEMS,
    Draw, DurationError, EndedEarly, GaveUp, Jitter, Policy, PolicyError, Quota, RateLimit, Retry,
    RetryAfter, RetryStream, Sleep, StopReason, TimedOut, TimedRetry, TimeoutBound, TokioClock,
    TokioSleep, Turn, TurnReport, parse_duration, retry,
};

// The families with a module of their own.
use retry_runtime::http::{
    AsTransport, ClassifyError, HttpError, Reply, ResendCount, ResponseExt, Rule,
    classify_response, classify_status, parse_retry_after, retry_after,
};
use retry_runtime::ladder::{
    Decided, Decision, Failure, Pending, Step, Why, decide, hinted, ideal_wait, jittered, max_wait,
    worst_case_wait, worst_case_wait_with_hints,
};
use retry_runtime::meter::{
    ATTEMPT_CLASSES, ATTEMPTS, CALLS, GIVE_UPS, OUTCOMES, QUOTA_REFUSALS, REASONS, STREAM_COMMITS,
    STREAM_RESTARTS, WAIT_SECONDS,
};
use retry_runtime::notice::{
    Action, Hook, Notice, RetryEvent, TurnEnd, TurnEnded, clear_process_hook, set_process_hook,
};
use retry_runtime::redact::{Redacted, clear_rule, set_rule};
use retry_runtime::sse::{
    DEFAULT_MAX_EVENT_SIZE, DecodeError, Event, Events, ModelEvents, StreamError, decode,
    is_content,
};
use retry_runtime::testing::{Recorded, StreamOf, collect, scope, scope_with_draw, stream_of};
use retry_runtime::turn::{
    CutWait, GaveUpRecord, InFlight, Op, OpName, TurnHandle, TurnOutcome, current, remaining,
};

#[test]
fn every_public_item_is_named_by_its_one_path() {
    // The `use` lines above are the test: each must resolve, at that path and no other that
    // this file names.
    let _ = parse_duration("1s");
}
