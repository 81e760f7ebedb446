//! `RetryStream::resume` against a real SSE server on 127.0.0.1, read with reqwest: a cut
//! stream continues from its last event ID (or its sequence number), each item reaches the
//! caller once, a first request is never sent again once the stream has a cursor, and a
//! resume that brings nothing new is a failed attempt. The server counts the POSTs and GETs.

use std::time::Duration;

use retry_runtime::http::{HttpError, ModelEvents, ResponseExt, StreamError};
use retry_runtime::notice::{Action, Notice};
use retry_runtime::sse::{self, Event};
use retry_runtime::{
    Class, Classify, EndedEarly, Ending, GaveUp, Policy, ResumeFrom, Retry, StopReason, TimedOut,
    Turn, ladder, testing,
};
use retry_tests::event_server::{EventServer, Part};
use std::sync::{Arc, Mutex};

#[derive(Debug, thiserror::Error, Classify)]
enum Failed {
    #[error(transparent)]
    #[classify(from)]
    Http(#[from] HttpError),
    #[error(transparent)]
    #[classify(from)]
    Request(#[from] reqwest::Error),
    #[error(transparent)]
    #[classify(from)]
    Stream(#[from] StreamError),
    #[error(transparent)]
    #[classify(from)]
    Ended(#[from] EndedEarly),
    #[error(transparent)]
    #[classify(from)]
    TimedOut(#[from] TimedOut),
}

type Delivered = Vec<Result<Event, GaveUp<Failed>>>;

/// An event with an ID and JSON data.
fn with_id(id: &str, data: &str) -> Part {
    Part::Bytes(format!("id: {id}\ndata: {data}\n\n"))
}

fn delta(text: &str) -> String {
    format!(r#"{{"type":"content_block_delta","delta":{{"type":"text_delta","text":"{text}"}}}}"#)
}

const STOP: &str = r#"{"type":"message_stop"}"#;

fn is_stop(event: &Event) -> bool {
    event.data() == STOP
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .build()
        .expect("build a reqwest client")
}

async fn send(request: reqwest::RequestBuilder) -> Result<ModelEvents, Failed> {
    Ok(request.send().await?.check_status().await?.events())
}

/// The GET that resumes from `from`, with its `Last-Event-ID`.
fn get(http: &reqwest::Client, url: &str, from: &ResumeFrom) -> reqwest::RequestBuilder {
    let request = http.get(url);
    match from.last_event_id() {
        Some(id) => request.header("last-event-id", id),
        None => request,
    }
}

/// POST, then resume with GETs, until the stream is complete at `message_stop`.
async fn read(server: &EventServer, policy: &Policy) -> (Delivered, testing::Recorded) {
    let http = client();
    let url = server.url();
    let stream = Retry::new(policy)
        .named("model")
        .stream(|_| send(http.post(&url)))
        .commit_when(sse::is_content)
        .complete_when(is_stop)
        .resume(|from| send(get(&http, &url, &from)));
    testing::scope(testing::collect(stream)).await
}

fn texts(delivered: &Delivered) -> Vec<String> {
    delivered
        .iter()
        .filter_map(|item| item.as_ref().ok())
        .map(|event| event.data().to_owned())
        .collect()
}

fn script(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|text| (*text).to_owned()).collect()
}

#[tokio::test]
async fn a_cut_after_three_deltas_resumes_from_event_three_and_each_delta_arrives_once() {
    let server = EventServer::start([
        vec![
            with_id("1", &delta("a")),
            with_id("2", &delta("b")),
            with_id("3", &delta("c")),
            Part::Cut,
        ],
        vec![with_id("4", &delta("d")), with_id("5", STOP)],
    ])
    .await;
    let (delivered, recorded) = read(&server, &Policy::AVAILABILITY).await;
    let expected = script(&[&delta("a"), &delta("b"), &delta("c"), &delta("d"), STOP]);
    assert_eq!(texts(&delivered), expected);
    assert!(delivered.iter().all(Result::is_ok));
    assert_eq!((server.count("POST"), server.count("GET")), (1, 1));
    assert_eq!(server.seen()[1].last_event_id.as_deref(), Some("3"));
    assert_eq!(recorded.waits().len(), 1);
}

#[tokio::test]
async fn a_server_that_replays_the_last_event_does_not_make_the_caller_see_it_twice() {
    let server = EventServer::start([
        vec![
            with_id("1", &delta("a")),
            with_id("2", &delta("b")),
            with_id("3", &delta("c")),
            Part::Cut,
        ],
        // The off-by-one seen in the wild: event 3 again, then what follows it.
        vec![
            with_id("3", &delta("c")),
            with_id("4", &delta("d")),
            with_id("5", STOP),
        ],
    ])
    .await;
    let (delivered, _) = read(&server, &Policy::AVAILABILITY).await;
    let expected = script(&[&delta("a"), &delta("b"), &delta("c"), &delta("d"), STOP]);
    assert_eq!(texts(&delivered), expected);
    assert_eq!((server.count("POST"), server.count("GET")), (1, 1));
}

/// An MCP tools/call stream: a priming event (an ID, a `retry:`, empty data), then the server
/// closes it before the JSON-RPC response, which it sends on the GET.
#[tokio::test]
async fn a_priming_event_then_a_clean_close_resumes_with_one_post_and_delivers_the_response() {
    let response = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
    let server = EventServer::start([
        vec![Part::Bytes("id: prime-1\nretry: 20\ndata: \n\n".into())],
        vec![
            Part::Bytes(format!("id: r-2\ndata: {response}\n\n")),
            Part::Stall,
        ],
    ])
    .await;
    let http = client();
    let url = server.url();
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| async { Ok::<_, Failed>(send(http.post(&url)).await?.raw()) })
        .commit_when(|event: &Event| !event.data().is_empty())
        .complete_when(|event: &Event| event.data().contains(r#""result""#))
        .resume(|from| {
            let request = get(&http, &url, &from);
            async move { Ok(send(request).await?.raw()) }
        });
    let (delivered, recorded) = testing::scope(testing::collect(stream)).await;
    // The priming event was held, and is delivered before the response.
    assert_eq!(texts(&delivered), ["", response]);
    assert_eq!((server.count("POST"), server.count("GET")), (1, 1));
    assert_eq!(server.seen()[1].last_event_id.as_deref(), Some("prime-1"));
    // The server's `retry:` is the floor under the wait.
    assert!(recorded.waits()[0] >= Duration::from_millis(20));
}

#[tokio::test]
async fn a_resume_answered_by_an_empty_200_every_time_gives_up_after_the_policys_attempts() {
    let policy = Policy::AVAILABILITY;
    let empty = std::iter::repeat_n(Vec::new(), 10);
    let server = EventServer::start(
        std::iter::once(vec![with_id("1", &delta("a")), Part::Cut]).chain(empty),
    )
    .await;
    let (delivered, recorded) = read(&server, &policy).await;
    assert_eq!(texts(&delivered), [delta("a")]);
    let Some(Err(gave_up)) = delivered.last() else {
        panic!("the stream ends in a give-up: {delivered:?}")
    };
    assert_eq!(gave_up.class(), Class::Transport);
    assert!(gave_up.is_undetermined());
    assert!(matches!(gave_up.reason(), StopReason::Exhausted { .. }));
    assert!(
        matches!(gave_up.error(), Failed::Ended(ended) if ended.ending() == Ending::NothingNew)
    );
    // The POST renewed the ladder; the GETs that brought nothing used it up.
    assert_eq!(server.count("POST"), 1);
    assert_eq!(server.count("GET") as u32, policy.attempts() - 1);
    assert_eq!(gave_up.attempts(), policy.attempts());
    assert!(recorded.total() <= ladder::worst_case_wait(&policy));
}

#[tokio::test]
async fn a_resume_that_stays_open_and_silent_is_a_failed_attempt_bounded_by_the_idle_timeout() {
    let policy = Policy::AVAILABILITY;
    let silent = std::iter::repeat_n(vec![Part::Stall], 10);
    let server = EventServer::start(
        std::iter::once(vec![with_id("1", &delta("a")), Part::Cut]).chain(silent),
    )
    .await;
    let http = client();
    let url = server.url();
    let stream = Retry::new(&policy)
        .stream(|_| send(http.post(&url)))
        .idle_timeout(Duration::from_millis(200))
        .resume(|from| send(get(&http, &url, &from)));
    let (delivered, _) = testing::scope(testing::collect(stream)).await;
    let Some(Err(gave_up)) = delivered.last() else {
        panic!("the stream ends in a give-up: {delivered:?}")
    };
    assert!(
        matches!(gave_up.error(), Failed::Ended(ended) if ended.ending() == Ending::NothingNew)
    );
    assert_eq!(server.count("GET") as u32, policy.attempts() - 1);
}

#[tokio::test]
async fn a_retry_field_of_1500_makes_the_recorded_wait_at_least_one_and_a_half_seconds() {
    let server = EventServer::start([
        vec![
            Part::Bytes(format!("retry: 1500\nid: 1\ndata: {}\n\n", delta("a"))),
            Part::Cut,
        ],
        vec![with_id("2", STOP)],
    ])
    .await;
    let (delivered, recorded) = read(&server, &Policy::AVAILABILITY).await;
    assert_eq!(texts(&delivered), [delta("a"), STOP.to_owned()]);
    assert_eq!(recorded.waits().len(), 1);
    assert!(recorded.waits()[0] >= Duration::from_millis(1500));
}

#[tokio::test]
async fn three_cuts_each_after_progress_are_each_resumed_and_the_stream_completes() {
    let server = EventServer::start([
        vec![with_id("1", &delta("a")), Part::Cut],
        vec![with_id("2", &delta("b")), Part::Cut],
        vec![with_id("3", &delta("c")), Part::Cut],
        vec![with_id("4", STOP)],
    ])
    .await;
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let turn = Turn::new(Duration::from_secs(30)).on_notice(move |notice| {
        if let Notice::Retry(event) = notice {
            sink.lock()
                .unwrap()
                .push((event.action, event.resume_from.map(str::to_owned)));
        }
    });
    let ((outcome, report), _) = testing::scope(turn.run(read_inside(&server))).await;
    let delivered = outcome.unwrap();
    let expected = script(&[&delta("a"), &delta("b"), &delta("c"), STOP]);
    assert_eq!(texts(&delivered), expected);
    assert_eq!((server.count("POST"), server.count("GET")), (1, 3));
    let froms: Vec<_> = server
        .seen()
        .iter()
        .filter_map(|seen| seen.last_event_id.clone())
        .collect();
    assert_eq!(froms, ["1", "2", "3"]);
    // Each resume is a notice of its own, a count of its own, and an attempt.
    let notices = notices.lock().unwrap().clone();
    assert!(
        notices
            .iter()
            .all(|(action, _)| matches!(action, Action::Resume { .. }))
    );
    let from: Vec<_> = notices.into_iter().filter_map(|(_, from)| from).collect();
    assert_eq!(from, ["event 1", "event 2", "event 3"]);
    assert_eq!(
        (report.resumes(), report.retries(), report.restarts()),
        (3, 0, 0)
    );
    assert_eq!(report.attempts(), 4);
}

async fn read_inside(server: &EventServer) -> Delivered {
    let http = client();
    let url = server.url();
    let stream = Retry::new(&Policy::AVAILABILITY)
        .named("model")
        .stream(|_| send(http.post(&url)))
        .complete_when(is_stop)
        .resume(|from| send(get(&http, &url, &from)));
    testing::collect(stream).await
}

#[tokio::test]
async fn a_stall_after_content_is_a_timeout_which_availability_does_not_resume() {
    let server = EventServer::start([vec![with_id("1", &delta("a")), Part::Stall]]).await;
    let http = client();
    let url = server.url();
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| send(http.post(&url)))
        .idle_timeout(Duration::from_millis(200))
        .resume(|from| send(get(&http, &url, &from)));
    let (delivered, _) = testing::scope(testing::collect(stream)).await;
    let Some(Err(gave_up)) = delivered.last() else {
        panic!("the stream ends in a give-up: {delivered:?}")
    };
    assert_eq!(
        gave_up.reason(),
        StopReason::NotRetried {
            class: Class::Timeout
        }
    );
    assert_eq!((server.count("POST"), server.count("GET")), (1, 0));
}

#[tokio::test]
async fn a_stream_without_ids_keeps_todays_committed_and_makes_no_get() {
    let server = EventServer::start([vec![Part::data(&delta("a")), Part::Cut]]).await;
    let (delivered, _) = read(&server, &Policy::AVAILABILITY).await;
    let Some(Err(gave_up)) = delivered.last() else {
        panic!("the stream ends in a give-up: {delivered:?}")
    };
    assert_eq!(gave_up.reason(), StopReason::Committed);
    assert_eq!((server.count("POST"), server.count("GET")), (1, 0));
}

#[tokio::test]
async fn an_overloaded_error_event_after_content_with_ids_is_not_resumed_but_committed() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = EventServer::start([vec![
        with_id("1", &delta("a")),
        Part::Bytes(format!("id: 2\nevent: error\ndata: {overloaded}\n\n")),
    ]])
    .await;
    let (delivered, _) = read(&server, &Policy::AVAILABILITY).await;
    let Some(Err(gave_up)) = delivered.last() else {
        panic!("the stream ends in a give-up: {delivered:?}")
    };
    assert_eq!(gave_up.reason(), StopReason::Committed);
    assert_eq!(gave_up.class(), Class::Unavailable { retry_after: None });
    assert_eq!((server.count("POST"), server.count("GET")), (1, 0));
}

#[tokio::test]
async fn a_cut_right_after_an_id_only_block_resumes_from_that_id() {
    let server = EventServer::start([
        vec![
            with_id("1", &delta("a")),
            Part::Bytes("id: 2\n\n".into()),
            Part::Cut,
        ],
        vec![with_id("3", STOP)],
    ])
    .await;
    let (delivered, _) = read(&server, &Policy::AVAILABILITY).await;
    assert_eq!(texts(&delivered), [delta("a"), STOP.to_owned()]);
    assert_eq!(server.seen()[1].last_event_id.as_deref(), Some("2"));
}

/// The Responses API's background mode: no IDs, a `sequence_number` in every event, and a
/// resume that asks for what follows it with `starting_after`.
fn sequence_number(event: &Event) -> Option<u64> {
    let data: serde_json::Value = serde_json::from_str(event.data()).ok()?;
    data["sequence_number"].as_u64()
}

fn responses_event(kind: &str, sequence: u64, delta: &str) -> Part {
    Part::Bytes(format!(
        "event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":{sequence},\"delta\":\"{delta}\"}}\n\n"
    ))
}

#[tokio::test]
async fn the_responses_api_script_resumes_with_starting_after_three_and_each_delta_once() {
    let delta = "response.output_text.delta";
    let server = EventServer::start([
        vec![
            responses_event("response.created", 0, ""),
            responses_event(delta, 1, "a"),
            responses_event(delta, 2, "b"),
            responses_event(delta, 3, "c"),
            Part::Cut,
        ],
        vec![
            // A server that replays from the last one it sent.
            responses_event(delta, 3, "c"),
            responses_event(delta, 4, "d"),
            responses_event("response.completed", 5, ""),
        ],
    ])
    .await;
    let http = client();
    let url = server.url();
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| send(http.post(&url)))
        .commit_when(sse::is_content)
        .cursor(sequence_number)
        .complete_when(|event: &Event| event.event() == "response.completed")
        .resume(|from| {
            let after = from.sequence().unwrap_or_default();
            send(http.get(format!("{url}/resp_1?stream=true&starting_after={after}")))
        });
    let (delivered, _) = testing::scope(testing::collect(stream)).await;
    let numbers: Vec<_> = delivered
        .iter()
        .map(|item| sequence_number(item.as_ref().unwrap()))
        .collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4, 5].map(Some));
    assert_eq!((server.count("POST"), server.count("GET")), (1, 1));
    assert!(
        server.seen()[1].uri.ends_with("starting_after=3"),
        "{:?}",
        server.seen()[1]
    );
}

#[tokio::test]
async fn a_resume_that_brings_only_a_priming_event_each_time_is_no_progress_and_gives_up() {
    let policy = Policy::AVAILABILITY;
    // Each reopen: a priming event with a fresh id (not content), then a clean close.
    let primed =
        (0..10).map(|n| vec![Part::Bytes(format!("id: prime-{n}\nretry: 10\ndata: \n\n"))]);
    let server = EventServer::start(
        std::iter::once(vec![with_id("1", &delta("a")), Part::Cut]).chain(primed),
    )
    .await;
    let (delivered, _) = read(&server, &policy).await;
    let Some(Err(gave_up)) = delivered.last() else {
        panic!("the stream ends in a give-up: {delivered:?}")
    };
    assert!(
        matches!(gave_up.reason(), StopReason::Exhausted { .. }),
        "{:?}",
        gave_up.reason()
    );
    assert_eq!(server.count("GET") as u32, policy.attempts() - 1);
}

mod paused {
    //! On tokio's paused clock, with scripted bodies: a resumed stream's own timers.

    use std::io;
    use std::time::Duration;

    use bytes::Bytes;
    use retry_runtime::sse::{self, DecodeError, Event};
    use retry_runtime::{Classify, EndedEarly, Policy, Retry, TimedOut, testing};

    #[derive(Debug, thiserror::Error, Classify)]
    enum Failed {
        #[error(transparent)]
        #[classify(transport)]
        Decode(#[from] DecodeError<io::Error>),
        #[error(transparent)]
        #[classify(from)]
        Ended(#[from] EndedEarly),
        #[error(transparent)]
        #[classify(from)]
        TimedOut(#[from] TimedOut),
    }

    type Body = sse::Events<
        std::pin::Pin<Box<dyn futures_core::Stream<Item = Result<Bytes, io::Error>> + Send>>,
    >;

    /// `first`, then a pause of `pause` (tokio's time), then `then`, then the end (or a cut).
    fn body(first: &'static str, pause: Duration, then: &'static str, cut: bool) -> Body {
        let parts = futures_util::stream::unfold(0, move |step| async move {
            match step {
                0 => Some((Ok(Bytes::from(first)), 1)),
                1 if pause.is_zero() && then.is_empty() && cut => Some((
                    Err(io::Error::new(io::ErrorKind::ConnectionReset, "cut")),
                    3,
                )),
                1 => {
                    // backoff-lint: allow(a scripted server's pause in a test body, on tokio's paused clock)
                    tokio::time::sleep(pause).await;
                    Some((Ok(Bytes::from(then)), 2))
                }
                _ => None,
            }
        });
        sse::decode(Box::pin(parts))
    }

    #[tokio::test(start_paused = true)]
    async fn a_resumed_stream_that_has_brought_content_is_not_cut_by_the_resumes_silence_bound() {
        let stream = Retry::new(&Policy::AVAILABILITY)
            .timeout(Duration::from_secs(30))
            .stream(|_| async {
                Ok::<_, Failed>(body("id: 1\ndata: a\n\n", Duration::ZERO, "", true))
            })
            .complete_when(|event: &Event| event.data() == "done")
            .resume(|_| async {
                // Content at once, then two minutes of quiet (a long tool call), then the end.
                Ok(body(
                    "id: 2\ndata: b\n\n",
                    Duration::from_secs(120),
                    "id: 3\ndata: done\n\n",
                    false,
                ))
            });
        let (items, _) = testing::scope(testing::collect(stream)).await;
        let data: Vec<_> = items
            .iter()
            .map(|item| item.as_ref().map(|event| event.data().to_owned()))
            .collect();
        assert!(data.iter().all(Result::is_ok), "{items:?}");
        let data: Vec<String> = data.into_iter().map(Result::unwrap).collect();
        assert_eq!(data, ["a", "b", "done"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_holds_a_resumable_stream_spawns_on_a_multi_thread_runtime() {
    let server = EventServer::start([
        vec![with_id("1", &delta("a")), Part::Cut],
        vec![with_id("2", STOP)],
    ])
    .await;
    let url = server.url();
    let task = tokio::spawn(async move {
        let http = client();
        let stream = Retry::new(&Policy::AVAILABILITY)
            .stream(|_| send(http.post(&url)))
            .complete_when(is_stop)
            .resume(|from| send(get(&http, &url, &from)));
        // The task holds the pinned stream across its awaits, as a harness's loop does.
        let mut stream = std::pin::pin!(stream);
        let mut delivered = Vec::new();
        while let Some(item) = futures_util::StreamExt::next(&mut stream).await {
            delivered.push(item);
        }
        delivered
    });
    let delivered: Delivered = task.await.expect("the spawned task completes");
    assert_eq!(texts(&delivered), [delta("a"), STOP.to_owned()]);
    assert_eq!((server.count("POST"), server.count("GET")), (1, 1));
}
