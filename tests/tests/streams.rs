//! `Retry::stream` over `ResponseExt::events()`, against a real SSE server on 127.0.0.1 and a
//! real reqwest client, counting requests on the server. The ladder's waits are skipped by
//! `testing::scope` in real time; the timeouts use short real durations. The server is the
//! library's fault server (`testing::FaultServer`, issue 47), which replaced the hand-written
//! one these tests began with.

use std::time::Duration;

use futures_util::StreamExt;
use retry_runtime::http::{CallError, HttpError, ModelEvents, ResponseExt};
use retry_runtime::testing::{Act, FaultServer, Script, ScriptedEvent};
use retry_runtime::turn::TurnOutcome;
use retry_runtime::{Class, GaveUp, Policy, Retry, StopReason, TimeoutBound, Turn, sse, testing};
use retry_tests::stream_headline::stream_reply;

/// The ready-made error: every failure a model stream can end with.
type Failure = CallError;

fn anthropic(name: &str, data: &str) -> ScriptedEvent {
    ScriptedEvent::new(name, data)
}

/// A fault server on 127.0.0.1 that plays `acts`, one a request.
async fn start(acts: impl IntoIterator<Item = Act>) -> FaultServer {
    FaultServer::start(Script::new(acts))
        .await
        .expect("start a fault server")
}

/// A `200 text/event-stream` of `events`, ending cleanly.
fn events(events: Vec<ScriptedEvent>) -> Act {
    Act::events(events)
}

/// `events`, then the connection cut.
fn cut(events: Vec<ScriptedEvent>) -> Act {
    let count = events.len();
    Act::events(events).cut_after(count)
}

/// `events`, then silence with the connection open.
fn stall(events: Vec<ScriptedEvent>) -> Act {
    let count = events.len();
    Act::events(events).stall_after(count)
}

fn message_start() -> ScriptedEvent {
    anthropic(
        "message_start",
        r#"{"type":"message_start","message":{"id":"msg","role":"assistant","content":[]}}"#,
    )
}

fn ping() -> ScriptedEvent {
    anthropic("ping", r#"{"type":"ping"}"#)
}

fn text_delta(text: &str) -> ScriptedEvent {
    anthropic(
        "content_block_delta",
        &format!(
            r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{text}"}}}}"#
        ),
    )
}

fn message_stop() -> ScriptedEvent {
    anthropic("message_stop", r#"{"type":"message_stop"}"#)
}

fn overloaded() -> ScriptedEvent {
    anthropic(
        "error",
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    )
}

/// Every event the caller saw, as `(name, data)`, and how the stream ended.
type Seen = (Vec<(String, String)>, Option<GaveUp<Failure>>);

/// Open `server`'s stream under `retry`, committing at `sse::is_content`, and read it all.
async fn read(
    retry: Retry,
    server: &FaultServer,
    configure: impl FnOnce(Opened) -> Configured,
) -> Seen {
    let http = reqwest::Client::new();
    let url = server.url();
    let open: Box<dyn FnMut(u32) -> Opening + Send> = Box::new(move |_| {
        let request = http.post(&url).body("prompt");
        Box::pin(async move {
            let response = request.send().await?.check_status().await?;
            Ok::<_, Failure>(response.events())
        })
    });
    let mut events = configure(retry.stream(open));
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => seen.push((event.event().to_owned(), event.data().to_owned())),
            Err(gave_up) => return (seen, Some(gave_up)),
        }
    }
    (seen, None)
}

/// The stream `read` configures: opened by a boxed closure.
type Opened = retry_runtime::RetryStream<Retry, Box<dyn FnMut(u32) -> Opening + Send>>;

type Opening =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<ModelEvents, Failure>> + Send>>;
type Configured = std::pin::Pin<
    Box<dyn futures_core::Stream<Item = Result<retry_runtime::sse::Event, GaveUp<Failure>>> + Send>,
>;

/// The usual configuration: commit at the first content.
fn at_content(stream: Opened) -> Configured {
    Box::pin(stream.commit_when(sse::is_content))
}

fn names(seen: &[(String, String)]) -> Vec<&str> {
    seen.iter().map(|(name, _)| name.as_str()).collect()
}

const AVAILABILITY: Retry = Retry::new(&Policy::AVAILABILITY).named("model");

#[tokio::test]
async fn anthropics_overloaded_event_after_message_start_is_retried_and_the_caller_sees_one_attempt()
 {
    let server = start([
        events(vec![message_start(), ping(), overloaded()]),
        events(vec![
            message_start(),
            ping(),
            text_delta("Hel"),
            text_delta("lo"),
            message_stop(),
        ]),
    ])
    .await;
    let ((seen, gave_up), recorded) = testing::scope(read(AVAILABILITY, &server, at_content)).await;
    assert!(gave_up.is_none(), "{gave_up:?}");
    assert_eq!(server.requests(), 2);
    assert_eq!(
        names(&seen),
        [
            "message_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "message_stop"
        ]
    );
    assert!(seen[2].1.contains("Hel") && seen[3].1.contains("lo"));
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
}

#[tokio::test]
async fn the_readmes_stream_example_recovers_from_an_overloaded_event() {
    let server = start([
        events(vec![message_start(), ping(), overloaded()]),
        events(vec![message_start(), text_delta("Hello"), message_stop()]),
    ])
    .await;
    let http = reqwest::Client::new();
    let (text, recorded) = testing::scope(stream_reply(&http, &server.url(), "hi")).await;
    assert_eq!(text.expect("the turn finished").unwrap(), "Hello");
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn the_readmes_stream_example_reads_openais_chat_chunks_without_the_empty_first_one() {
    let chunk = |delta: &str| {
        ScriptedEvent::data(&format!(
            r#"{{"object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta},"finish_reason":null}}]}}"#
        ))
    };
    let server = start([events(vec![
        chunk(r#"{"role":"assistant","content":""}"#),
        chunk(r#"{"content":"Hi"}"#),
        chunk(r#"{"content":" \"there\"\n"}"#),
        ScriptedEvent::data("[DONE]"),
    ])])
    .await;
    let http = reqwest::Client::new();
    let (text, _) = testing::scope(stream_reply(&http, &server.url(), "hi")).await;
    assert_eq!(text.expect("the turn finished").unwrap(), "Hi \"there\"\n");
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn an_openai_chat_server_error_in_the_stream_is_not_retried_under_availability() {
    let server = start([events(vec![ScriptedEvent::data(
        r#"{"error":{"type":"server_error","message":"The server had an error while processing your request."}}"#,
    )])])
    .await;
    let ((seen, gave_up), recorded) = testing::scope(read(AVAILABILITY, &server, at_content)).await;
    let gave_up = gave_up.expect("the stream gives up");
    assert_eq!(gave_up.class(), Class::ServerError);
    assert_eq!(
        gave_up.reason(),
        StopReason::NotRetried {
            class: Class::ServerError
        }
    );
    let Failure::Stream(error) = gave_up.error() else {
        panic!("not a stream error: {gave_up:?}");
    };
    assert!(error.http_error().is_some_and(HttpError::is_in_stream));
    assert!(seen.is_empty());
    assert_eq!(server.requests(), 1);
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn insufficient_quota_inside_a_stream_is_one_request_and_no_wait() {
    let server = start([events(vec![ScriptedEvent::data(
        r#"{"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota"}}"#,
    )])])
    .await;
    let ((_, gave_up), recorded) = testing::scope(read(AVAILABILITY, &server, at_content)).await;
    assert_eq!(gave_up.unwrap().class(), Class::QuotaExhausted);
    assert_eq!(server.requests(), 1);
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn a_connection_cut_before_content_is_transport_and_retried() {
    let server = start([
        cut(vec![message_start(), ping()]),
        events(vec![message_start(), text_delta("whole"), message_stop()]),
    ])
    .await;
    let turn = Turn::new(Duration::from_secs(180));
    let (((seen, gave_up), report), _) = testing::scope(async {
        let (outcome, report) = turn.run(read(AVAILABILITY, &server, at_content)).await;
        (outcome.unwrap(), report)
    })
    .await;
    assert!(gave_up.is_none(), "{gave_up:?}");
    assert_eq!(server.requests(), 2);
    assert_eq!(
        names(&seen),
        ["message_start", "content_block_delta", "message_stop"]
    );
    assert_eq!(report.retries_of(Class::Transport), 1);
    assert_eq!(report.attempts(), server.requests());
}

#[tokio::test]
async fn a_connection_cut_after_three_deltas_ends_with_committed_and_the_deltas_delivered_once() {
    let server = start([cut(vec![
        message_start(),
        text_delta("one"),
        text_delta("two"),
        text_delta("three"),
    ])])
    .await;
    let ((seen, gave_up), recorded) = testing::scope(read(AVAILABILITY, &server, at_content)).await;
    let gave_up = gave_up.expect("the cut ends the stream");
    assert_eq!(gave_up.reason(), StopReason::Committed);
    assert_eq!(gave_up.class(), Class::Transport);
    assert!(gave_up.is_undetermined());
    assert_eq!(server.requests(), 1);
    assert_eq!(
        names(&seen),
        [
            "message_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta"
        ]
    );
    assert!(recorded.waits().is_empty());
}

#[tokio::test]
async fn a_malformed_json_frame_is_definitive_after_one_request() {
    let server = start([events(vec![
        message_start(),
        anthropic("content_block_delta", r#"{"type":"content_block_delta","#),
    ])])
    .await;
    let ((seen, gave_up), _) = testing::scope(read(AVAILABILITY, &server, at_content)).await;
    let gave_up = gave_up.expect("a malformed frame ends the stream");
    assert_eq!(gave_up.class(), Class::Definitive);
    assert_eq!(gave_up.reason(), StopReason::Definitive);
    assert!(seen.is_empty(), "the held preamble is never delivered");
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn an_event_over_the_cap_is_definitive_after_one_request() {
    let big = format!(
        r#"{{"type":"content_block_delta","text":"{}"}}"#,
        "x".repeat(4096)
    );
    let server = start([events(vec![
        message_start(),
        anthropic("content_block_delta", &big),
    ])])
    .await;
    let http = reqwest::Client::new();
    let url = server.url();
    let stream = AVAILABILITY
        .stream(|_| {
            let request = http.post(&url);
            async move {
                let response = request.send().await?.check_status().await?;
                Ok::<_, Failure>(response.events().max_event_size(1024))
            }
        })
        .commit_when(sse::is_content);
    let (items, _) = testing::scope(testing::collect(stream)).await;
    assert_eq!(items.len(), 1);
    let gave_up = items.into_iter().next().unwrap().unwrap_err();
    assert_eq!(gave_up.class(), Class::Definitive);
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn a_stall_before_the_first_event_times_out_at_commit_timeout_and_is_retried_when_the_policy_retries_timeouts()
 {
    static PATIENT: Policy = Policy::AVAILABILITY.retrying(Class::Timeout);
    let server = start([
        stall(vec![]),
        events(vec![message_start(), text_delta("late"), message_stop()]),
    ])
    .await;
    let ((seen, gave_up), recorded) = testing::scope(read(
        Retry::new(&PATIENT).named("model"),
        &server,
        |stream| {
            Box::pin(
                stream
                    .commit_when(sse::is_content)
                    .commit_timeout(Duration::from_millis(300)),
            )
        },
    ))
    .await;
    assert!(gave_up.is_none(), "{gave_up:?}");
    assert_eq!(server.requests(), 2);
    assert_eq!(
        names(&seen),
        ["message_start", "content_block_delta", "message_stop"]
    );
    assert_eq!(recorded.waits().len(), 1);
    // The stalled attempt's connection was closed before the retry.
    server.wait_for_closed(1).await;
}

#[tokio::test]
async fn a_stall_at_commit_timeout_is_a_timeout_that_availability_does_not_retry() {
    let server = start([stall(vec![message_start()])]).await;
    let ((_, gave_up), _) = testing::scope(read(AVAILABILITY, &server, |stream| {
        Box::pin(
            stream
                .commit_when(sse::is_content)
                .commit_timeout(Duration::from_millis(300)),
        )
    }))
    .await;
    let gave_up = gave_up.expect("the stall ends the stream");
    let Failure::TimedOut(timed_out) = gave_up.error() else {
        panic!("not a timeout: {gave_up:?}");
    };
    assert_eq!(timed_out.bound(), TimeoutBound::Commit);
    assert_eq!(gave_up.class(), Class::Timeout);
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn a_stall_after_content_with_idle_timeout_ends_with_committed() {
    let server = start([stall(vec![message_start(), text_delta("some")])]).await;
    let ((seen, gave_up), _) = testing::scope(read(AVAILABILITY, &server, |stream| {
        Box::pin(
            stream
                .commit_when(sse::is_content)
                .idle_timeout(Duration::from_millis(300)),
        )
    }))
    .await;
    let gave_up = gave_up.expect("the stall ends the stream");
    assert_eq!(gave_up.reason(), StopReason::Committed);
    let Failure::TimedOut(timed_out) = gave_up.error() else {
        panic!("not a timeout: {gave_up:?}");
    };
    assert_eq!(timed_out.bound(), TimeoutBound::Idle);
    assert_eq!(names(&seen), ["message_start", "content_block_delta"]);
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn a_layered_give_up_inside_a_retried_function_is_not_run_again() {
    // An enclosing `#[retry]` that consumes a committed stream does not run it again.
    #[retry_runtime::retry(name = "turn step")]
    async fn consume(server: &FaultServer) -> Result<usize, GaveUp<Failure>> {
        let (seen, gave_up) = read(AVAILABILITY, server, at_content).await;
        match gave_up {
            Some(gave_up) => Err(gave_up),
            None => Ok(seen.len()),
        }
    }
    let server = start([
        cut(vec![message_start(), text_delta("one")]),
        events(vec![message_start(), text_delta("again"), message_stop()]),
    ])
    .await;
    let (result, _) = testing::scope(consume(&server)).await;
    assert_eq!(result.unwrap_err().reason(), StopReason::Committed);
    assert_eq!(server.requests(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_stream_example_runs_in_a_spawned_task() {
    let server = start([
        events(vec![message_start(), ping(), overloaded()]),
        events(vec![message_start(), text_delta("Hello"), message_stop()]),
    ])
    .await;
    let url = server.url();
    // A harness spawns its turns: the task holds the stream across its awaits.
    let task = tokio::spawn(async move {
        let http = reqwest::Client::new();
        testing::scope(stream_reply(&http, &url, "hi")).await
    });
    let (text, recorded) = task.await.expect("the task runs to its end");
    assert_eq!(text.expect("the turn finished").unwrap(), "Hello");
    assert_eq!(recorded.waits(), [Duration::from_millis(250)]);
    assert_eq!(server.requests(), 2);
}

/// A task that makes and holds a stream spawns whether a literal, an owned name or nothing
/// names it, and whatever the policy it borrows lives for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_holding_a_stream_spawns_whatever_names_it() {
    fn open(_: u32) -> std::future::Ready<Result<testing::StreamOf<Result<u32, Class>>, Class>> {
        std::future::ready(Ok(testing::stream_of(vec![Ok(1), Ok(2)])))
    }
    /// Read a stream the caller holds pinned, yielding between items.
    async fn count<S: futures_core::Stream<Item = Result<u32, GaveUp<Class>>>>(
        mut stream: std::pin::Pin<&mut S>,
    ) -> usize {
        let mut count = 0;
        while let Some(item) = stream.next().await {
            item.expect("no failure");
            tokio::task::yield_now().await;
            count += 1;
        }
        count
    }
    let shared: std::sync::Arc<str> = "model".into();
    // Each task makes its stream and holds it across its awaits.
    let tasks = [
        tokio::spawn(async {
            let policy = Policy::AVAILABILITY.with_attempts(2);
            let mut stream = std::pin::pin!(Retry::new(&policy).named("model").stream(open));
            count(stream.as_mut()).await
        }),
        tokio::spawn(async move {
            let retry = Retry::new(&Policy::AVAILABILITY).named_owned(shared);
            let mut stream = std::pin::pin!(retry.stream(open));
            count(stream.as_mut()).await
        }),
        tokio::spawn(async {
            let mut stream = std::pin::pin!(Retry::new(&Policy::AVAILABILITY).stream(open));
            count(stream.as_mut()).await
        }),
    ];
    for task in tasks {
        assert_eq!(task.await.expect("the task runs to its end"), 2);
    }
}

/// What a turn's hook told a person, a sentence a notice.
async fn told(server: &FaultServer) -> Vec<String> {
    let notices = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&notices);
    let turn = Turn::new(Duration::from_secs(180))
        .on_notice(move |notice| sink.lock().unwrap().push(notice.to_string()));
    testing::scope(turn.run(read(AVAILABILITY, server, at_content))).await;
    notices.lock().unwrap().clone()
}

#[tokio::test]
async fn a_stream_cut_before_its_first_content_is_told_as_cut_not_unreachable() {
    let server = start([
        cut(vec![message_start(), ping()]),
        events(vec![message_start(), text_delta("Hello"), message_stop()]),
    ])
    .await;
    assert_eq!(
        told(&server).await,
        ["model's stream was cut before its first content: retrying (2 of 4) in 250 ms"]
    );
}

#[tokio::test]
async fn a_stream_cut_after_its_output_is_told_as_cut_after_delivering_it() {
    let server = start([cut(vec![message_start(), text_delta("one")])]).await;
    assert_eq!(
        told(&server).await,
        [
            "model's stream was cut after it had delivered output: gave up after 1 of 4 \
             attempts: the stream had delivered output; a retry would repeat it"
        ]
    );
}

#[tokio::test]
async fn a_stream_whose_server_cannot_be_reached_is_told_so() {
    // A port where nothing listens: each connection is refused, for real, at once.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let notices = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&notices);
    let turn = Turn::new(Duration::from_secs(180))
        .on_notice(move |notice| sink.lock().unwrap().push(notice.to_string()));
    let http = reqwest::Client::new();
    let url = format!("http://{address}/v1/messages");
    let stream = AVAILABILITY.stream(|_| {
        let request = http.post(&url).body("prompt");
        async move { Ok::<_, Failure>(request.send().await?.check_status().await?.events()) }
    });
    let ((outcome, _), _) = testing::scope(turn.run(testing::collect(stream))).await;
    let TurnOutcome::Finished(items) = outcome else {
        panic!("the turn ends with the stream's give-up");
    };
    assert!(matches!(&items[..], [Err(gave_up)] if gave_up.class() == Class::Transport));
    let told = notices.lock().unwrap().clone();
    assert_eq!(told.len(), 4);
    assert_eq!(
        told[0],
        "model could not be reached: retrying (2 of 4) in 250 ms"
    );
}

/// A retry stream is `Send` with what it owns, read to its end in a task of its own on a
/// multi-thread runtime (as a server's handler spawns one per request): its `Retry`'s name has
/// no lifetime for rustc's check of the spawned future to trip on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_stream_runs_on_a_spawned_task() {
    let task = tokio::spawn(async {
        let mut opened = 0;
        let stream = Retry::new(&Policy::AVAILABILITY)
            .named("spawned")
            .stream(move |_| {
                opened += 1;
                let items = match opened {
                    1 => vec![Err(Class::Transport)],
                    _ => vec![Ok("Hel"), Ok("lo")],
                };
                async move { Ok::<_, Class>(testing::stream_of(items)) }
            });
        let read = async {
            let mut read = Vec::new();
            let mut stream = std::pin::pin!(stream);
            while let Some(item) = stream.next().await {
                read.push(item.expect("an item"));
            }
            read
        };
        // The ladder's wait recorded, not slept.
        testing::scope(read).await
    });
    let (read, recorded) = task.await.expect("the task ran");
    assert_eq!(read, ["Hel", "lo"]);
    assert_eq!(recorded.waits().len(), 1);
}
