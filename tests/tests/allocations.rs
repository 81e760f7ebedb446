//! A first-try success allocates nothing, and a retry at most once: the hot path of every
//! call, through `Retry` or an annotated function, pays only for what it uses (issue 2's
//! quality bar).
//!
//! `allocation-counter` installs a counting `#[global_allocator]` in this test binary only
//! (no other test names the crate) and counts the allocations of the current thread, so the
//! test harness's own threads do not disturb the count.

use retry_runtime::{Class, Policy, Retry, retry};
use retry_tests::{poll_once, warmed_runtime};

#[test]
fn a_first_try_success_allocates_nothing() {
    let mut result = None;

    let counted = allocation_counter::measure(|| {
        let retry = Retry::new(&Policy::AVAILABILITY);
        result = Some(poll_once(retry.run(async |_| Ok::<_, Class>(42))));
    });

    assert_eq!(result.map(Result::ok), Some(Some(42)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

#[test]
fn a_first_try_success_on_a_tokio_runtime_allocates_nothing() {
    let runtime = warmed_runtime();
    let mut result = None;

    let counted = allocation_counter::measure(|| {
        result = Some(runtime.block_on(async {
            Retry::new(&Policy::AVAILABILITY)
                .run(async |_| Ok::<_, Class>(42))
                .await
        }));
    });

    assert_eq!(result.map(Result::ok), Some(Some(42)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

#[test]
fn each_built_in_policy_and_every_later_call_allocates_nothing_on_a_first_try_success() {
    for policy in &Policy::BUILT_IN {
        let retry = Retry::new(policy);
        for _ in 0..3 {
            let counted = allocation_counter::measure(|| {
                let result = poll_once(retry.run(async |attempt| Ok::<_, Class>(attempt)));
                assert!(matches!(result, Ok(1)));
            });
            assert_eq!(counted.count_total, 0, "{}: {counted:?}", policy.name());
        }
    }
}

#[test]
fn the_counter_sees_an_allocation_on_this_thread() {
    // Without this, a counter that never counts would pass every test above.
    let counted = allocation_counter::measure(|| {
        std::hint::black_box(Box::new(7_u64));
    });

    assert_eq!(counted.count_total, 1);
}

/// A ladder whose first wait is a nanosecond, without jitter: a retry at (almost) zero wait.
const NO_WAIT: retry_runtime::Policy = Policy::AVAILABILITY
    .with_base(std::time::Duration::from_nanos(1))
    .with_multiplier(1.0)
    .with_jitter(retry_runtime::Jitter::None);

thread_local! {
    /// How many attempts of [`fails_then_succeeds`] and [`annotated_fails_then_succeeds`] are
    /// left to fail, on this test's thread (the runtimes here are current-thread ones).
    static FAILURES_LEFT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn fail_next(failures: u32) {
    FAILURES_LEFT.set(failures);
}

fn attempt_fails() -> bool {
    let left = FAILURES_LEFT.get();
    FAILURES_LEFT.set(left.saturating_sub(1));
    left > 0
}

async fn fails_once() -> Result<u32, retry_runtime::GaveUp<Class>> {
    fail_next(1);
    fails_then_succeeds().await
}

/// Fails as often as [`fail_next`] said, then succeeds: through `Retry::run`.
async fn fails_then_succeeds() -> Result<u32, retry_runtime::GaveUp<Class>> {
    Retry::new(&NO_WAIT)
        .run(async |attempt| {
            if attempt_fails() {
                Err(Class::Transport)
            } else {
                Ok(attempt)
            }
        })
        .await
}

/// The same, through the attribute.
#[retry(policy = NO_WAIT)]
async fn annotated_fails_then_succeeds() -> Result<u32, Class> {
    if attempt_fails() {
        Err(Class::Transport)
    } else {
        Ok(1)
    }
}

/// A paused current-thread runtime that has already run a retry in a turn, of both forms: the
/// runtime's, the RNG's and a turn's own first-use costs are not the retry's.
fn paused_after_one_retry() -> tokio::runtime::Runtime {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a paused current-thread runtime");
    runtime.block_on(fails_once()).unwrap();
    runtime.block_on(
        retry_runtime::Turn::new(std::time::Duration::from_secs(60)).run(async {
            fail_next(1);
            annotated_fails_then_succeeds().await.unwrap();
            fails_once().await.unwrap();
        }),
    );
    runtime
}

/// The allocations of `call` failing `failures` times, on `runtime`; inside a turn of a
/// minute if `in_turn`, less the turn's own (a turn around no call).
fn allocations_of<T, E, F: std::future::Future<Output = Result<T, E>>>(
    runtime: &tokio::runtime::Runtime,
    call: fn() -> F,
    failures: u32,
    in_turn: bool,
) -> u64 {
    let count = |with_call: bool| {
        fail_next(if with_call { failures } else { 0 });
        let work = async move {
            if with_call {
                assert!(call().await.is_ok(), "the call succeeded after its retries");
            }
        };
        let counted = allocation_counter::measure(|| {
            if in_turn {
                let turn = retry_runtime::Turn::new(std::time::Duration::from_secs(60));
                runtime.block_on(turn.run(work));
            } else {
                runtime.block_on(work);
            }
        });
        assert_eq!(FAILURES_LEFT.get(), 0, "every failure was made");
        counted.count_total
    };
    count(true) - count(false)
}

#[test]
fn one_retry_outside_a_turn_allocates_nothing() {
    let runtime = paused_after_one_retry();
    assert_eq!(allocations_of(&runtime, fails_then_succeeds, 1, false), 0);
}

#[test]
fn three_retries_outside_a_turn_allocate_nothing() {
    let runtime = paused_after_one_retry();
    assert_eq!(allocations_of(&runtime, fails_then_succeeds, 3, false), 0);
}

#[test]
fn one_retry_of_an_annotated_function_outside_a_turn_allocates_nothing() {
    let runtime = paused_after_one_retry();
    assert_eq!(
        allocations_of(&runtime, annotated_fails_then_succeeds, 1, false),
        0
    );
}

#[test]
fn three_retries_of_an_annotated_function_outside_a_turn_allocate_nothing() {
    let runtime = paused_after_one_retry();
    assert_eq!(
        allocations_of(&runtime, annotated_fails_then_succeeds, 3, false),
        0
    );
}

/// In a turn a call allocates its flight, its record in the turn, and nothing per retry: its
/// place among the turn's cancel listeners is taken once and kept. (The list of places is the
/// turn's: made when the turn starts listening, with room for four, so a turn's fifth
/// listener at once grows it.)
#[test]
fn a_call_with_one_retry_in_a_turn_allocates_at_most_once() {
    let runtime = paused_after_one_retry();
    let counted = allocations_of(&runtime, fails_then_succeeds, 1, true);
    assert!(counted <= 1, "{counted} allocations");
}

#[test]
fn a_call_with_three_retries_in_a_turn_allocates_at_most_once() {
    let runtime = paused_after_one_retry();
    let counted = allocations_of(&runtime, fails_then_succeeds, 3, true);
    assert!(counted <= 1, "{counted} allocations");
}

#[test]
fn an_annotated_call_with_one_retry_in_a_turn_allocates_at_most_once() {
    let runtime = paused_after_one_retry();
    let counted = allocations_of(&runtime, annotated_fails_then_succeeds, 1, true);
    assert!(counted <= 1, "{counted} allocations");
}

#[test]
fn an_annotated_call_with_three_retries_in_a_turn_allocates_at_most_once() {
    let runtime = paused_after_one_retry();
    let counted = allocations_of(&runtime, annotated_fails_then_succeeds, 3, true);
    assert!(counted <= 1, "{counted} allocations");
}

#[test]
fn the_in_turn_count_sees_the_calls_flight() {
    // The measure is not empty: in a turn, a call that fails allocates its flight.
    let runtime = paused_after_one_retry();
    assert_eq!(allocations_of(&runtime, fails_then_succeeds, 1, true), 1);
}

// The attribute's expansion, counted the same way.

#[retry]
async fn answer(n: u32) -> Result<u32, Class> {
    Ok(n * 2)
}

#[retry(policy = "transient", budget = "30s")]
async fn answer_within_a_budget(n: u32) -> Result<u32, Class> {
    Ok(n * 2)
}

#[test]
fn a_first_try_success_of_an_annotated_function_allocates_nothing() {
    let mut result = None;

    let counted = allocation_counter::measure(|| result = Some(poll_once(answer(21))));

    assert_eq!(result, Some(Ok(42)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

#[test]
fn a_first_try_success_under_a_literal_budget_allocates_nothing() {
    let runtime = warmed_runtime();
    let mut result = None;

    let counted = allocation_counter::measure(|| {
        result = Some(runtime.block_on(answer_within_a_budget(21)));
    });

    assert_eq!(result, Some(Ok(42)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

/// A delta's text with no escape is borrowed from the event's data: reading it allocates
/// nothing, for each provider's shape (issue 34).
#[test]
fn reading_a_deltas_text_without_escapes_allocates_nothing() {
    use retry_runtime::sse::Event;
    let events = [
        Event::new(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
        ),
        Event::new(
            "",
            r#"{"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#,
        ),
        Event::new(
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","sequence_number":4,"delta":"Hello"}"#,
        ),
        Event::new(
            "",
            r#"{"candidates":[{"content":{"parts":[{"text":"Hello"}],"role":"model"},"index":0}]}"#,
        ),
    ];
    for event in &events {
        let counted = allocation_counter::measure(|| {
            assert_eq!(std::hint::black_box(event.text()).as_deref(), Some("Hello"));
        });
        assert_eq!(counted.count_total, 0, "{}: {counted:?}", event.data());
    }
}

/// The chunks of a body as an always-ready byte stream that makes each chunk as it is asked
/// for, as a network body does: it holds nothing itself.
struct Chunks<F>(F);

impl<F: FnMut() -> Option<bytes::Bytes> + Unpin> futures_core::Stream for Chunks<F> {
    type Item = Result<bytes::Bytes, std::convert::Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::task::Poll::Ready((self.0)().map(Ok))
    }
}

/// Every item of `stream`, polled with a no-op waker (the source is always ready).
fn drain_events<S: futures_core::Stream + Unpin>(mut stream: S) -> Vec<S::Item> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut items = Vec::new();
    while let std::task::Poll::Ready(Some(item)) =
        std::pin::Pin::new(&mut stream).poll_next(&mut cx)
    {
        items.push(item);
    }
    items
}

/// One chunk of `body`, shared already, so that slicing it allocates nothing (a body from
/// hyper arrives shared).
fn one_shared_chunk(body: String) -> Chunks<impl FnMut() -> Option<bytes::Bytes> + Unpin> {
    let chunk = bytes::Bytes::from(body);
    drop(chunk.clone());
    let mut once = Some(chunk);
    Chunks(move || once.take())
}

/// An event of one `data:` line, with its type and ID, is sliced from its chunk: decoding it
/// allocates nothing, and a comment or a keep-alive nothing either (issue 35); the stream's
/// end copies its last event ID once.
#[test]
fn decoding_an_event_of_one_data_line_allocates_nothing() {
    use retry_runtime::sse;
    let mut body = String::new();
    for i in 0..1000 {
        body.push_str(&format!(
            ": keep-alive\nevent: content_block_delta\nid: {i}\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"token {i}\"}}}}\n\n"
        ));
    }
    let source = one_shared_chunk(body);
    let mut events = Vec::with_capacity(1000);
    let counted = allocation_counter::measure(|| {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut stream = std::pin::pin!(sse::decode(source));
        while let std::task::Poll::Ready(Some(event)) =
            futures_core::Stream::poll_next(stream.as_mut(), &mut cx)
        {
            events.push(event.expect("an event"));
        }
    });
    assert_eq!(events.len(), 1000);
    assert_eq!(events[999].id(), Some("999"));
    // None an event: the one is the stream's, its last event ID copied out as it ends.
    assert_eq!(counted.count_total, 1, "{counted:?}");
    assert_eq!(counted.bytes_total, 3, "{counted:?}");
}

/// An event of several data lines is joined in the decoder's buffer and copied out once.
#[test]
fn decoding_an_event_of_several_data_lines_allocates_once_for_it() {
    use retry_runtime::sse;
    let body = "data: a\ndata: b\ndata: c\n\n".repeat(1000);
    let source = one_shared_chunk(body);
    let mut events = Vec::with_capacity(1000);
    let counted = allocation_counter::measure(|| {
        events = drain_events(Box::pin(sse::decode(source)));
    });
    assert_eq!(events.len(), 1000);
    assert_eq!(
        events[0].as_ref().map(|event| event.data()).ok(),
        Some("a\nb\nc")
    );
    // The vector of events, the box, the joining buffer once, and one copy an event.
    assert!(counted.count_total <= 1000 + 3 + 12, "{counted:?}");
}

/// A line that never ends is refused at the cap, having held at most the cap, the chunks in
/// flight (the decoder's one, and the next the source makes before the last is dropped) and
/// the decoder's 16 KiB segment of the line it carries (100 MiB offered, 10,000 bytes at a
/// time, so chunks straddle segments).
#[test]
fn a_line_of_a_hundred_mebibytes_with_no_newline_holds_at_most_the_cap_and_the_chunks() {
    use retry_runtime::sse::{self, DEFAULT_MAX_EVENT_SIZE, DecodeError};
    const CHUNK: usize = 10_000; // not a multiple of the 16 KiB segment
    let mut offered = 0;
    let source = Chunks(move || {
        (offered < 100 << 20).then(|| {
            offered += CHUNK;
            let mut chunk = vec![b'x'; CHUNK];
            if offered == CHUNK {
                chunk[..6].copy_from_slice(b"data: ");
            }
            bytes::Bytes::from(chunk)
        })
    });
    let mut items = Vec::new();
    let counted = allocation_counter::measure(|| {
        items = drain_events(sse::decode(source));
    });
    assert!(matches!(
        items[..],
        [Err(DecodeError::TooLarge {
            limit: DEFAULT_MAX_EVENT_SIZE
        })]
    ));
    let bound = (DEFAULT_MAX_EVENT_SIZE + 2 * CHUNK + 16 * 1024) as u64;
    eprintln!("peak: {} bytes, bound {bound}", counted.bytes_max);
    assert!(
        counted.bytes_max <= bound,
        "{} > {bound}: {counted:?}",
        counted.bytes_max
    );
}

/// A source that gives its chunks, then stays pending: a stream still being read.
struct ThenPending(std::vec::IntoIter<bytes::Bytes>);

impl futures_core::Stream for ThenPending {
    type Item = Result<bytes::Bytes, std::convert::Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        match self.0.next() {
            Some(chunk) => std::task::Poll::Ready(Some(Ok(chunk))),
            None => std::task::Poll::Pending,
        }
    }
}

/// The last event ID persists across events; a slice of the chunk it came in would keep that
/// chunk (here 900 kB) alive for the rest of the stream. Once the events are dropped, the
/// decoder holds only what it needs: the ID copied out, and the chunk it is reading.
#[test]
fn a_persisting_event_id_does_not_keep_its_chunk_alive() {
    use retry_runtime::sse;
    let mut events = Box::pin(sse::decode(ThenPending(Vec::new().into_iter())));
    let counted = allocation_counter::measure(|| {
        // Made here, so that the count sees them: the chunks are what must not stay.
        let big = format!("id: 1\ndata: {}\n\n", "x".repeat(900_000));
        let small = "data: a\n\n".repeat(100);
        let chunks = vec![bytes::Bytes::from(big), bytes::Bytes::from(small)];
        events = Box::pin(sse::decode(ThenPending(chunks.into_iter())));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut read = 0;
        while let std::task::Poll::Ready(Some(event)) =
            futures_core::Stream::poll_next(events.as_mut(), &mut cx)
        {
            assert_eq!(event.expect("an event").id(), Some("1"));
            read += 1;
        }
        assert_eq!(read, 101);
    });
    assert_eq!(events.last_event_id(), Some("1"));
    assert!(counted.bytes_current < 64 * 1024, "{counted:?}");
}

/// Inside a turn whose hook hears every retry, telling the hook allocates nothing: the turn's
/// hooks are called in place, not collected for each retry (issue 36). Three calls of one
/// retry each allocate the same in a turn with a hook as in one without.
#[test]
fn telling_a_turns_hook_of_a_retry_allocates_nothing() {
    use retry_runtime::Turn;
    use std::sync::atomic::{AtomicU32, Ordering};
    static HEARD: AtomicU32 = AtomicU32::new(0);
    let runtime = paused_after_one_retry();
    let counted_in = |turn: Turn| {
        let counted = allocation_counter::measure(|| {
            runtime.block_on(turn.run(async {
                for _ in 0..3 {
                    fails_once().await.unwrap();
                }
            }));
        });
        counted.count_total
    };
    let minute = std::time::Duration::from_secs(60);
    let with_hook = || {
        Turn::new(minute).on_notice(|_| {
            HEARD.fetch_add(1, Ordering::Relaxed);
        })
    };
    counted_in(with_hook());
    let heard = HEARD.load(Ordering::Relaxed);
    let (without, with) = (counted_in(Turn::new(minute)), counted_in(with_hook()));
    assert_eq!(
        HEARD.load(Ordering::Relaxed) - heard,
        3,
        "the hook heard each retry"
    );
    assert_eq!(with, without, "a hook costs {} allocations", with - without);
}

/// A tower service that answers at once, allocating nothing: `503` while [`fail_next`] says
/// to fail, then `200`.
fn answers(
    _: u32,
) -> std::future::Ready<Result<http::Response<&'static str>, std::convert::Infallible>> {
    let status = if attempt_fails() { 503 } else { 200 };
    let mut response = http::Response::new("answer");
    *response.status_mut() = http::StatusCode::from_u16(status).expect("a status");
    std::future::ready(Ok(response))
}

type Answers = tower::util::ServiceFn<
    fn(u32) -> std::future::Ready<Result<http::Response<&'static str>, std::convert::Infallible>>,
>;

/// The tower layer around [`answers`], on a retry of `policy`.
fn through_the_layer(policy: &'static Policy) -> retry_runtime::tower::RetryService<Answers> {
    use tower::Layer;
    let inner: Answers = tower::service_fn(answers);
    retry_runtime::tower::RetryLayer::new(Retry::new(policy)).layer(inner)
}

/// The layer's future is named and holds the inner service's: a call through it allocates
/// nothing of its own, where a boxed future would allocate once a call.
#[test]
fn a_first_try_success_through_the_tower_layer_allocates_nothing() {
    use tower::Service;
    let mut service = through_the_layer(&Policy::AVAILABILITY);
    let inner_alone = allocation_counter::measure(|| {
        let mut inner: Answers = tower::service_fn(answers);
        let response = poll_once(inner.call(7)).expect("an answer");
        assert_eq!(response.status(), 200);
    });
    let mut status = None;
    let counted = allocation_counter::measure(|| {
        let call: retry_runtime::tower::ResponseFuture<Answers, u32> = service.call(7);
        status = Some(poll_once(call).expect("an answer").status());
    });

    assert_eq!(status, Some(http::StatusCode::OK));
    assert_eq!(
        inner_alone.count_total, 0,
        "the inner service allocates nothing: {inner_alone:?}"
    );
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

/// A retry through the layer: its wait is held in the named future too, so the one allocation
/// is the refusal's own [`HttpError`](retry_runtime::http::HttpError), boxed when the `503` is
/// read: the per-retry work only this crate does.
#[test]
fn one_retry_through_the_tower_layer_allocates_only_its_refusal() {
    use tower::Service;
    let runtime = paused_after_one_retry();
    let mut service = through_the_layer(&NO_WAIT);
    // The layer's own first retry on this runtime: what tokio sets up once is not the call's.
    fail_next(1);
    let _ = runtime.block_on(service.call(7));
    fail_next(1);
    let mut status = None;
    let counted = allocation_counter::measure(|| {
        status = Some(
            runtime
                .block_on(service.call(7))
                .expect("an answer")
                .status(),
        );
    });

    assert_eq!(FAILURES_LEFT.get(), 0, "the first attempt failed");
    assert_eq!(status, Some(http::StatusCode::OK));
    assert_eq!(counted.count_total, 1, "{counted:?}");
}

static UPSTREAM: retry_runtime::Upstream = retry_runtime::Upstream::new("allocations");

/// On an upstream with nothing to say (no pause, no gate), a first try reads one atomic word
/// and allocates nothing, in both forms.
#[test]
fn a_first_try_success_on_an_upstream_allocates_nothing() {
    let mut results = (None, None);
    let counted = allocation_counter::measure(|| {
        let retry = Retry::new(&Policy::AVAILABILITY).upstream(&UPSTREAM);
        results.0 = Some(poll_once(retry.run(async |_| Ok::<_, Class>(42))));
        results.1 = Some(poll_once(annotated_on_an_upstream()));
    });

    assert_eq!(results.0.map(Result::ok), Some(Some(42)));
    assert_eq!(results.1.map(Result::ok), Some(Some(7)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
}

#[retry(policy = "availability", upstream = UPSTREAM)]
async fn annotated_on_an_upstream() -> Result<u32, Class> {
    Ok(7)
}

static PRIMARY: retry_runtime::Upstream = retry_runtime::Upstream::new("allocations-primary");
static SECONDARY: retry_runtime::Upstream = retry_runtime::Upstream::new("allocations-secondary");
static ACROSS: retry_runtime::Upstreams = retry_runtime::Upstreams::new(&[&PRIMARY, &SECONDARY]);

/// Across an ordered set whose first upstream has nothing to say, a first try reads its word
/// and allocates nothing, in both forms; nor does a move to the second upstream.
#[test]
fn a_first_try_success_across_upstreams_allocates_nothing() {
    let mut results = (None, None, None);
    let counted = allocation_counter::measure(|| {
        let retry = Retry::new(&Policy::AVAILABILITY).across(&ACROSS);
        let first = poll_once(retry.run(async |to| Ok::<_, Class>(to.name())));
        results.0 = Some(first.map(retry_runtime::Answered::into_value));
        results.1 = Some(poll_once(annotated_across()));
    });
    assert_eq!(results.0.map(Result::ok), Some(Some("allocations-primary")));
    assert_eq!(results.1.map(Result::ok), Some(Some(7)));
    assert_eq!(counted.count_total, 0, "{counted:?}");
    // A move: the primary fails, the secondary answers; only the failure's note allocates
    // (how the call left the primary, kept for a give-up's report: its box, its list and the
    // failure's text, redacted, with the redaction's own buffer).
    let counted = allocation_counter::measure(|| {
        let retry = Retry::new(&Policy::AVAILABILITY).across(&ACROSS);
        let moved = poll_once(retry.run(async |to| match to.name() {
            "allocations-primary" => Err(Class::Unavailable { retry_after: None }),
            name => Ok(name),
        }));
        results.2 = Some(moved.map(retry_runtime::Answered::into_value));
    });
    assert_eq!(
        results.2.map(Result::ok),
        Some(Some("allocations-secondary"))
    );
    assert!(counted.count_total <= 5, "{counted:?}");
}

#[retry(policy = "availability", across = ACROSS)]
async fn annotated_across() -> Result<u32, Class> {
    Ok(7)
}

/// A move across two upstreams through the attribute allocates nothing: the report of how a
/// call left each upstream is noted only where a give-up returns it (a `GaveUp`), and the
/// attribute gives the caller its error alone. Before, each move boxed the report and wrote
/// the failure's text into it.
mod a_move {
    use super::{allocations_of, attempt_fails, paused_after_one_retry};
    use retry_runtime::{Class, Classify, Upstream, UpstreamPaused, Upstreams, retry};

    static FIRST: Upstream = Upstream::new("allocations-first");
    static SECOND: Upstream = Upstream::new("allocations-second");
    static BOTH: Upstreams = Upstreams::new(&[&FIRST, &SECOND]);

    #[derive(Debug)]
    enum Failed {
        /// The key's quota spent: a move ("not this key"), and nothing the upstream keeps.
        Limited,
        Paused(UpstreamPaused),
    }

    impl Classify for Failed {
        fn classify(&self) -> Class {
            match self {
                Failed::Limited => Class::QuotaExhausted,
                Failed::Paused(paused) => paused.classify(),
            }
        }
    }

    impl From<UpstreamPaused> for Failed {
        fn from(paused: UpstreamPaused) -> Self {
            Failed::Paused(paused)
        }
    }

    impl std::fmt::Display for Failed {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a failure whose text a report would copy")
        }
    }

    /// Fails on the set's first upstream as often as `fail_next` said, then succeeds.
    #[retry(policy = "availability", across = BOTH)]
    async fn moves() -> Result<&'static str, Failed> {
        let to = Upstream::current().expect("polled on its upstream");
        if std::ptr::eq(to, &FIRST) && attempt_fails() {
            return Err(Failed::Limited);
        }
        Ok(to.name())
    }

    #[test]
    fn a_move_across_two_upstreams_through_the_attribute_allocates_nothing() {
        let runtime = paused_after_one_retry();
        // Once before, so that the upstreams' and the metrics' first uses are not counted.
        super::fail_next(1);
        assert_eq!(runtime.block_on(moves()).unwrap(), "allocations-second");
        assert_eq!(allocations_of(&runtime, moves, 1, false), 0);
    }
}
