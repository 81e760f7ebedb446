//! What a stream's end says (issue 42): an OpenAI chat finish with no text is an answer, a
//! resume that is refused leaves the outcome undetermined, a give-up or a drop after
//! delivered output knows it was delivered, a renewed ladder decides every failure, renewals
//! never run out, and the rules take closures that capture. The model servers are real, on
//! 127.0.0.1, and count what they saw; the ladder's own arithmetic uses scripted streams.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use retry_runtime::http::{CallError, ModelEvents, ResponseExt};
use retry_runtime::notice::{Action, Notice, Reached};
use retry_runtime::sse::{self, Event};
use retry_runtime::{
    Class, Classify, EndedEarly, GaveUp, Policy, Retry, StopReason, Turn, testing,
};
use retry_tests::event_server::{EventServer, Part, client, resume_get as get};

type Delivered = Vec<Result<Event, GaveUp<CallError>>>;

/// A model's event stream, as the guide's stream example reads it.
async fn send(request: reqwest::RequestBuilder) -> Result<ModelEvents, CallError> {
    Ok(request.send().await?.check_status().await?.events())
}

fn with_id(id: &str, data: &str) -> Part {
    Part::Bytes(format!("id: {id}\ndata: {data}\n\n"))
}

fn delta(text: &str) -> String {
    format!(r#"{{"type":"content_block_delta","delta":{{"type":"text_delta","text":"{text}"}}}}"#)
}

/// What a notice said: its sentence, its action and how far the attempt got.
type Told = Vec<(String, Action, Reached)>;

/// A turn that keeps every retry notice.
fn telling() -> (Turn, Arc<Mutex<Told>>) {
    let told = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&told);
    let turn = Turn::new(Duration::from_secs(60)).on_notice(move |notice| {
        if let Notice::Retry(event) = notice {
            let said = (event.to_string(), event.action, event.reached);
            sink.lock().unwrap().push(said);
        }
    });
    (turn, told)
}

fn data(delivered: &Delivered) -> Vec<String> {
    delivered
        .iter()
        .filter_map(|item| item.as_ref().ok())
        .map(|event| event.data().to_owned())
        .collect()
}

#[tokio::test]
async fn an_openai_chat_finish_with_no_text_commits_with_one_request_and_the_empty_answer_delivered()
 {
    let role = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
    let finish = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}"#;
    let server = EventServer::start([
        vec![Part::data(role), Part::data(finish), Part::data("[DONE]")],
        vec![Part::data(role), Part::data(finish), Part::data("[DONE]")],
        vec![Part::data(role), Part::data(finish), Part::data("[DONE]")],
        vec![Part::data(role), Part::data(finish), Part::data("[DONE]")],
    ])
    .await;
    let (http, url) = (client(), server.url());
    // The guide's stream example, as pasted.
    let events = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| send(http.post(&url)))
        .commit_when(sse::is_content);
    let (turn, told) = telling();
    let ((delivered, report), recorded) = testing::scope(turn.run(testing::collect(events))).await;
    let delivered = delivered.unwrap();

    assert_eq!(server.requests(), 1, "one POST, billed once");
    assert_eq!(data(&delivered), [role, finish]);
    assert!(delivered.iter().all(Result::is_ok));
    assert!(recorded.waits().is_empty());
    assert!(
        told.lock().unwrap().is_empty(),
        "{:?}",
        told.lock().unwrap()
    );
    assert_eq!((report.calls(), report.commits()), (1, 1));
}

#[test]
fn a_chat_chunk_that_ends_the_answer_is_content_and_the_usage_chunk_is_not() {
    let finish = Event::new(
        "",
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    );
    let usage = Event::new("", r#"{"choices":[],"usage":{"prompt_tokens":5}}"#);
    let running = Event::new(
        "",
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":null}]}"#,
    );
    assert!(sse::is_content(&finish));
    assert!(!sse::is_content(&usage));
    assert!(!sse::is_content(&running));
}

/// A tools/call-like stream: three events with IDs, then a cut; the resume `GET` is answered
/// with `status`.
async fn refused_resume(status: u16) -> (Delivered, EventServer, Told) {
    let server = EventServer::start_with_heads([
        (
            200,
            vec![],
            vec![
                with_id("1", &delta("a")),
                with_id("2", &delta("b")),
                with_id("3", &delta("c")),
                Part::Cut,
            ],
        ),
        (status, vec![], vec![]),
    ])
    .await;
    let (http, url) = (client(), server.url());
    let stream = Retry::new(&Policy::AVAILABILITY)
        .named("tools/call")
        .stream(|_| send(http.post(&url)))
        .commit_when(sse::is_content)
        .complete_when(|event: &Event| event.data().contains("message_stop"))
        .resume(|from| send(get(&http, &url, &from)));
    let (turn, told) = telling();
    let ((delivered, _), _) = testing::scope(turn.run(testing::collect(stream))).await;
    let told = told.lock().unwrap().clone();
    (delivered.unwrap(), server, told)
}

#[tokio::test]
async fn a_refused_resume_after_delivered_events_gives_up_undetermined_with_its_own_reason_and_notice()
 {
    for status in [405, 404] {
        let (delivered, server, told) = refused_resume(status).await;
        assert_eq!(
            data(&delivered),
            [delta("a"), delta("b"), delta("c")],
            "{status}"
        );
        assert_eq!((server.count("POST"), server.count("GET")), (1, 1));
        let gave_up = delivered.last().unwrap().as_ref().unwrap_err();
        assert_eq!(gave_up.reason().name(), "resume_failed", "{status}");
        assert!(gave_up.is_undetermined(), "{status}: the tool may have run");
        assert!(gave_up.delivered_output(), "{status}");
        assert_eq!(gave_up.attempts(), 2);
        let (sentence, action, reached) = told.last().unwrap().clone();
        assert!(
            matches!(action, Action::GiveUp { reason } if reason.name() == "resume_failed"),
            "{action:?}"
        );
        assert!(sentence.contains("could not resume"), "{sentence}");
        assert!(!sentence.contains("answered with an error"), "{sentence}");
        // The give-up on the reopen knows the stream had delivered output.
        assert_eq!(reached, Reached::Output, "{sentence}");
    }
}

#[test]
fn a_resume_failed_reason_says_the_outcome_is_unknown() {
    let reason = retry_runtime::ladder::decide(
        &Policy::AVAILABILITY,
        retry_runtime::ladder::Failure::new(2, Class::Definitive).with_reopen(true),
    )
    .with_draw(retry_runtime::Draw::IDEAL)
    .step
    .stop_reason();
    assert_eq!(reason, Some(StopReason::ResumeFailed));
    let text = StopReason::ResumeFailed.to_string();
    assert!(text.contains("could not be resumed"), "{text}");
}

/// Scripted, numbered items: a cursor of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scripted {
    Cut,
    Overloaded,
    Ended,
    Refused,
}

impl From<EndedEarly> for Scripted {
    fn from(_: EndedEarly) -> Self {
        Scripted::Ended
    }
}

impl Classify for Scripted {
    fn classify(&self) -> Class {
        match self {
            Scripted::Cut | Scripted::Ended => Class::Transport,
            Scripted::Overloaded => Class::Unavailable { retry_after: None },
            Scripted::Refused => Class::Definitive,
        }
    }
}

impl std::fmt::Display for Scripted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

type Items = testing::StreamOf<Result<u64, Scripted>>;

fn ready(items: Vec<Result<u64, Scripted>>) -> std::future::Ready<Result<Items, Scripted>> {
    std::future::ready(Ok(testing::stream_of(items)))
}

#[tokio::test]
async fn a_give_up_on_a_reopen_after_delivered_output_says_the_output_was_delivered() {
    // Two items delivered, a cut, then every reopen fails before it opens.
    let stream = Retry::new(&Policy::AVAILABILITY)
        .named("model")
        .stream(|_| ready(vec![Ok(1), Ok(2), Err(Scripted::Cut)]))
        .cursor(|n: &u64| Some(*n))
        .complete_when(|n: &u64| *n == 3)
        .resume(|_| std::future::ready(Err::<Items, _>(Scripted::Cut)));
    let (turn, told) = telling();
    let ((items, _), _) = testing::scope(turn.run(testing::collect(stream))).await;
    let items = items.unwrap();
    assert!(matches!(items[..2], [Ok(1), Ok(2)]));
    let gave_up = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
    assert!(gave_up.delivered_output());
    let told = told.lock().unwrap().clone();
    let (sentence, action, reached) = told.last().unwrap().clone();
    assert!(matches!(action, Action::GiveUp { .. }));
    assert_eq!(reached, Reached::Output, "{sentence}");
    assert!(
        sentence.starts_with("model's stream was cut after it had delivered output"),
        "{sentence}"
    );
    // Every reopen's notice says the same: not "could not be reached".
    assert!(
        told.iter()
            .all(|(_, _, reached)| *reached == Reached::Output)
    );
}

#[tokio::test(start_paused = true)]
async fn a_drop_in_the_wait_before_a_reopen_after_delivered_output_finishes_the_call() {
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| ready(vec![Ok(1), Ok(2), Err(Scripted::Cut)]))
        .cursor(|n: &u64| Some(*n))
        .complete_when(|n: &u64| *n == 3)
        .resume(|_| ready(vec![Ok(3)]));
    let (outcome, report) = Turn::new(Duration::from_secs(60))
        .run(async move {
            let mut stream = pin!(stream);
            let first = [stream.next().await, stream.next().await];
            // The cut: the stream waits before its reopen, and is dropped there.
            let waiting = tokio::time::timeout(Duration::from_millis(1), stream.next()).await;
            (first, waiting.is_err())
        })
        .await;
    let (first, dropped_in_wait) = outcome.unwrap();
    assert!(dropped_in_wait);
    assert!(matches!(first, [Some(Ok(1)), Some(Ok(2))]));
    // Its output reached the caller: the call finished, it was not dropped unfinished.
    assert_eq!((report.calls(), report.commits()), (1, 1));
    assert!(report.in_flight().is_empty(), "{:?}", report.in_flight());
    assert!(report.cut_waits().is_empty(), "{:?}", report.cut_waits());
    assert!(report.gave_up().is_empty());
}

#[tokio::test]
async fn a_provider_error_event_after_renewals_is_decided_on_the_renewed_ladder() {
    // Each attempt up to the fourth brings something new, then is cut (resumed: renewed);
    // the fourth's new item is followed by a provider error event. On the renewed ladder it
    // is the first failure, so it restarts (the caller opted in); on the whole count it
    // would be the fourth of four, and give up `Exhausted`.
    let posts = AtomicU32::new(0);
    let restarts = AtomicU32::new(0);
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| {
            let post = posts.fetch_add(1, Ordering::SeqCst);
            ready(match post {
                0 => vec![Ok(1), Err(Scripted::Cut)],
                _ => vec![Ok(1), Ok(2), Ok(3), Ok(4), Ok(5)],
            })
        })
        .cursor(|n: &u64| Some(*n))
        .complete_when(|n: &u64| *n == 5)
        .restart_after_commit(|| {
            restarts.fetch_add(1, Ordering::SeqCst);
        })
        .resume(|from| {
            let next = from.sequence().unwrap_or(0) + 1;
            ready(match next {
                2 | 3 => vec![Ok(next), Err(Scripted::Cut)],
                _ => vec![Ok(next), Err(Scripted::Overloaded)],
            })
        });
    let (items, recorded) = testing::scope(testing::collect(stream)).await;
    assert!(items.iter().all(Result::is_ok), "{items:?}");
    assert_eq!(posts.load(Ordering::SeqCst), 2);
    assert_eq!(restarts.load(Ordering::SeqCst), 1);
    assert_eq!(recorded.waits().len(), 4);
}

#[tokio::test]
async fn a_resumable_stream_that_restarts_after_its_commit_point_still_runs_out_of_attempts() {
    // Every open delivers an item, then the provider's error event: a restart each time (the
    // caller opted in), never a resume. A restart's first item repeats what was delivered, so
    // it renews nothing: four attempts, then `Exhausted`.
    // Past 50 opens the script answers, so a ladder that never runs out ends instead of looping.
    let opens = AtomicU32::new(0);
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| {
            let open = opens.fetch_add(1, Ordering::SeqCst) + 1;
            ready(match open {
                1..=50 => vec![Ok(1), Err(Scripted::Overloaded)],
                _ => vec![Err(Scripted::Refused)],
            })
        })
        .cursor(|n: &u64| Some(*n))
        .restart_after_commit(|| {})
        .resume(|_| ready(vec![Err(Scripted::Refused)]));
    let (items, _) = testing::scope(testing::collect(stream)).await;
    let gave_up = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
    assert_eq!(opens.load(Ordering::SeqCst), 4);
}

/// Resumes that each bring one new item, `renewals` times, then a server that brings nothing:
/// the stream keeps renewing, then gives up after the policy's attempts, counted from the
/// last renewal. Each reopen past the script is refused, so a ladder that stopped counting
/// ends instead of looping.
async fn renewed(renewals: u64) -> (Vec<Result<u64, GaveUp<Scripted>>>, u64) {
    let reopens = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&reopens);
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| ready(vec![Ok(0), Err(Scripted::Cut)]))
        .cursor(|n: &u64| Some(*n))
        .resume(move |from| {
            let reopen = u64::from(counted.fetch_add(1, Ordering::Relaxed)) + 1;
            let last = from.sequence().unwrap_or(0);
            ready(match reopen {
                _ if reopen <= renewals => vec![Ok(last + 1), Err(Scripted::Cut)],
                _ if reopen <= renewals + 10 => vec![Err(Scripted::Cut)],
                _ => vec![Err(Scripted::Refused)],
            })
        });
    let (items, _) = testing::scope(testing::collect(stream)).await;
    (items, u64::from(reopens.load(Ordering::Relaxed)))
}

#[tokio::test]
async fn renewals_past_65535_keep_renewing_and_a_wedged_server_still_exhausts_the_ladder() {
    let renewals = 65_540;
    let (items, reopens) = renewed(renewals).await;
    let delivered = items.iter().filter(|item| item.is_ok()).count() as u64;
    assert_eq!(delivered, renewals + 1);
    let gave_up = items.last().unwrap().as_ref().unwrap_err();
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
    // After the last progress, three reopens that bring nothing: four attempts on the ladder.
    assert_eq!(reopens, renewals + 3);
    assert_eq!(u64::from(gave_up.attempts()), 1 + renewals + 3);
}

/// Spawned on a multi-thread runtime: the future must be `Send + 'static`.
fn spawned<F>(future: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(future)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capturing_closures_as_commit_complete_and_cursor_rules_on_a_spawned_stream() {
    // A JSON-RPC call's own id, and the content marker, captured by the rules.
    let id: u64 = 7;
    let content_from: u64 = 2;
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(move |attempt| {
            ready(match attempt {
                1 => vec![Ok(1), Err(Scripted::Cut)],
                _ => vec![Ok(1), Ok(2), Ok(id), Ok(99)],
            })
        })
        .commit_when(move |n: &u64| *n >= content_from)
        .complete_when(move |n: &u64| *n == id)
        .cursor(move |n: &u64| (*n < id).then_some(*n));
    let task = spawned(testing::scope(testing::collect(stream)));
    let (items, recorded) = task.await.unwrap();
    let items: Vec<u64> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(items, [1, 2, id]);
    assert_eq!(recorded.waits().len(), 1);
}
