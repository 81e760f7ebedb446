//! Fallback across upstreams on real sockets: two providers of our own on loopback, one per
//! model, each counting what it saw (every request with the call that sent it, when it was sent
//! and what it answered). Calls go across an ordered set of upstreams (`Upstreams`); the
//! counts are the providers', not the client's.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use retry_runtime::http::{HttpError, ResponseExt};
use retry_runtime::{
    Class, Classify, LeftBecause, Policy, Retry, StopReason, Turn, Upstream, UpstreamPaused,
    Upstreams, retry,
};
use tokio::time::Instant;

/// A call's failure: the provider's answer, the connection's, or held back by an upstream.
#[derive(Debug, thiserror::Error)]
enum Failed {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
    #[error(transparent)]
    Paused(#[from] UpstreamPaused),
}

impl Classify for Failed {
    fn classify(&self) -> Class {
        match self {
            Failed::Http(error) => error.classify(),
            Failed::Transport(error) => error.classify(),
            Failed::Paused(paused) => paused.classify(),
        }
    }
}

/// How a provider answers.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// `200` after `latency`.
    Healthy,
    /// `503` (no hint) until then, healthy after.
    OutUntil(Instant),
    /// Its first request is refused with `429` and `Retry-After: secs`; healthy after, and it
    /// counts requests sent inside the pause it announced.
    LimitedOnce(u64),
    /// `429` with OpenAI's `insufficient_quota`: a per-day quota, every time.
    OutOfQuota,
    /// `400`: the request is wrong, every time.
    BadRequest,
}

/// One request as the provider saw it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    /// The call that sent it (the client's `x-call` header).
    call: u32,
    /// When it was sent and when it arrived.
    sent: Instant,
    arrived: Instant,
    status: u16,
}

struct Model {
    start: Instant,
    mode: Mode,
    latency: Duration,
    /// The pause it announced: from when, to when.
    announced: Option<(Instant, Instant)>,
    seen: Vec<Seen>,
}

type Shared = Arc<Mutex<Model>>;

async fn answer(State(model): State<Shared>, headers: HeaderMap) -> Response {
    let arrived = Instant::now();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
    };
    let (status, latency, hint) = {
        let mut m = model.lock().unwrap();
        let sent = header("x-sent-ns").map_or(arrived, |ns| m.start + Duration::from_nanos(ns));
        let (status, hint) = match m.mode {
            Mode::OutUntil(until) if arrived < until => (503, None),
            Mode::LimitedOnce(secs) if m.announced.is_none() => {
                m.announced = Some((arrived, arrived + Duration::from_secs(secs)));
                (429, Some(secs))
            }
            Mode::OutOfQuota => (429, None),
            Mode::BadRequest => (400, None),
            _ => (200, None),
        };
        let call = u32::try_from(header("x-call").unwrap_or(0)).unwrap();
        m.seen.push(Seen {
            call,
            sent,
            arrived,
            status,
        });
        (status, m.latency, hint)
    };
    if status == 200 {
        tokio::time::sleep(latency).await;
    }
    let body = match status {
        200 => r#"{"choices":[{"message":{"content":"hi"}}]}"#,
        429 if hint.is_none() => {
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#
        }
        429 => r#"{"error":{"message":"slow down","type":"rate_limit_exceeded"}}"#,
        400 => r#"{"error":{"message":"bad","type":"invalid_request_error"}}"#,
        _ => "down",
    };
    let mut response = (StatusCode::from_u16(status).unwrap(), body).into_response();
    if let Some(secs) = hint {
        let value = HeaderValue::from_str(&secs.to_string()).unwrap();
        response.headers_mut().insert("retry-after", value);
    }
    response
}

async fn serve(start: Instant, mode: Mode, latency: Duration) -> (SocketAddr, Shared) {
    let shared = Arc::new(Mutex::new(Model {
        start,
        mode,
        latency,
        announced: None,
        seen: Vec::new(),
    }));
    let app = Router::new()
        .fallback(answer)
        .with_state(Arc::clone(&shared));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, shared)
}

/// The secondary's own time to answer.
const SECONDARY: Duration = Duration::from_millis(20);

/// Two providers, `primary` in `mode` and a healthy secondary, behind `upstreams`' two names.
struct Pair {
    start: Instant,
    addrs: Arc<HashMap<&'static str, SocketAddr>>,
    primary: Shared,
    secondary: Shared,
}

async fn pair(set: &'static Upstreams, mode: impl FnOnce(Instant) -> Mode) -> Pair {
    let start = Instant::now();
    let [first, second] = set.upstreams() else {
        panic!("a pair");
    };
    let (primary_addr, primary) = serve(start, mode(start), SECONDARY).await;
    let (secondary_addr, secondary) = serve(start, Mode::Healthy, SECONDARY).await;
    let addrs = HashMap::from([
        (first.name(), primary_addr),
        (second.name(), secondary_addr),
    ]);
    Pair {
        start,
        addrs: Arc::new(addrs),
        primary,
        secondary,
    }
}

impl Pair {
    fn seen(&self) -> (Vec<Seen>, Vec<Seen>) {
        let primary = self.primary.lock().unwrap().seen.clone();
        let secondary = self.secondary.lock().unwrap().seen.clone();
        (primary, secondary)
    }
}

/// One call across `set` with `policy`: its request goes to the provider of the upstream the
/// route chose, stamped with the call's number and when it was sent.
async fn call(
    pair: &Pair,
    set: &'static Upstreams,
    policy: &'static Policy,
    n: u32,
) -> Result<retry_runtime::Answered<u16>, retry_runtime::GaveUp<Failed>> {
    let client = reqwest::Client::new();
    let (addrs, start) = (Arc::clone(&pair.addrs), pair.start);
    Retry::new(policy)
        .across(set)
        .run_fn(move |to| {
            let (client, addr) = (client.clone(), addrs[to.name()]);
            async move {
                let sent = Instant::now().saturating_duration_since(start).as_nanos();
                let response = client
                    .post(format!("http://{addr}/v1/chat/completions"))
                    .header("x-call", n.to_string())
                    .header("x-sent-ns", sent.to_string())
                    .send()
                    .await?;
                Ok::<_, Failed>(response.check_status().await?.status().as_u16())
            }
        })
        .await
}

/// `calls` calls arriving `every` apart: each one's outcome, and the report of the turn it ran
/// in.
async fn arrivals(
    pair: &Pair,
    set: &'static Upstreams,
    policy: &'static Policy,
    calls: u32,
    every: Duration,
) -> Vec<(
    Result<&'static str, retry_runtime::GaveUp<Failed>>,
    retry_runtime::TurnReport,
)> {
    let mut tasks = Vec::new();
    for n in 0..calls {
        let pair = Pair {
            start: pair.start,
            addrs: Arc::clone(&pair.addrs),
            primary: Arc::clone(&pair.primary),
            secondary: Arc::clone(&pair.secondary),
        };
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(pair.start + every * n).await;
            let turn = Turn::new(Duration::from_secs(30));
            let (outcome, report) = turn.run(call(&pair, set, policy, n)).await;
            let outcome = outcome.into_finished().expect("the turn outlasts the call");
            (outcome.map(|answered| answered.upstream().name()), report)
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

static CLAUDE: Upstream = Upstream::new("claude");
static GPT: Upstream = Upstream::new("gpt");
static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);

/// The primary down for 1.5 s (the issue's 5 s, shortened for a test; BENCHMARKS.md has the
/// 5 s run), a healthy secondary, 60 calls at 20 a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_an_outage_of_the_primary_every_call_succeeds_on_the_secondary_and_comes_back() {
    let outage = Duration::from_millis(1500);
    let pair = pair(&MODELS, |start| Mode::OutUntil(start + outage)).await;
    let outcomes = arrivals(
        &pair,
        &MODELS,
        &Policy::AVAILABILITY,
        60,
        Duration::from_millis(50),
    )
    .await;
    let (primary, secondary) = pair.seen();
    for (outcome, report) in &outcomes {
        assert!(outcome.is_ok(), "every call succeeds: {outcome:?}");
        // No call waited: each made at most one failed attempt, then the secondary's.
        assert_eq!(report.waiting(), Duration::ZERO, "{report}");
        assert!(report.attempts() <= 2, "{report}");
    }
    let ends = pair.start + outage;
    let during: Vec<_> = primary.iter().filter(|seen| seen.arrived < ends).collect();
    // The gate's threshold (3) and one probe per rung of the policy's ladder from when the gate
    // opened (250, 500 ms: within the outage, the rungs at 0.25 and 0.75 s after it opened).
    let (threshold, _) = CLAUDE.gate_rule();
    let rungs = probe_rungs(&Policy::AVAILABILITY, outage);
    eprintln!(
        "primary: {} requests, {} during the outage (at most {} + {rungs}); secondary: {}",
        primary.len(),
        during.len(),
        threshold,
        secondary.len()
    );
    assert!(during.len() <= (threshold + rungs) as usize, "{during:?}");
    assert!(during.len() < 9, "fewer than LiteLLM's best, 9");
    // Per call, on the providers: at most one request to the primary, and at most one to the
    // secondary.
    for n in 0..60 {
        let to = |seen: &[Seen]| seen.iter().filter(|seen| seen.call == n).count();
        assert!(to(&primary) <= 1 && to(&secondary) <= 1, "call {n}");
    }
    // Traffic returns: the first success of the primary is the probe that found its recovery,
    // and every call sent after it goes to the primary.
    let recovered = primary
        .iter()
        .filter(|seen| seen.status == 200)
        .map(|seen| seen.sent)
        .min()
        .expect("the primary recovered within the run");
    let later_on_secondary: Vec<_> = secondary
        .iter()
        .filter(|seen| seen.sent > recovered)
        .collect();
    assert!(later_on_secondary.is_empty(), "{later_on_secondary:?}");
    assert!(primary.iter().filter(|seen| seen.status == 200).count() > 10);
    let moved: u32 = outcomes.iter().map(|(_, report)| report.moves()).sum();
    assert!(
        moved >= 3,
        "the calls that failed on the primary moved: {moved}"
    );
    CLAUDE.reset();
}

/// The rungs of `policy`'s probe ladder that fall within `outage` of the gate's opening.
fn probe_rungs(policy: &Policy, outage: Duration) -> u32 {
    let mut at = Duration::ZERO;
    let mut rungs = 0;
    for rung in 1.. {
        at += retry_runtime::ladder::ideal_wait(policy, rung);
        if at >= outage {
            return rungs;
        }
        rungs += 1;
    }
    rungs
}

static LIMITED: Upstream = Upstream::new("limited");
static SPARE: Upstream = Upstream::new("spare");
static LIMITED_FIRST: Upstreams = Upstreams::new(&[&LIMITED, &SPARE]);

/// The primary rate-limited with `Retry-After: 1` (the issue's 5 s, shortened): calls go to the
/// secondary at once during the pause and back after it; none to the primary inside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_on_the_primary_sends_calls_to_the_secondary_for_the_pause() {
    let pair = pair(&LIMITED_FIRST, |_| Mode::LimitedOnce(1)).await;
    let outcomes = arrivals(
        &pair,
        &LIMITED_FIRST,
        &Policy::AVAILABILITY,
        40,
        Duration::from_millis(50),
    )
    .await;
    let (primary, secondary) = pair.seen();
    assert!(outcomes.iter().all(|(outcome, _)| outcome.is_ok()));
    assert!(
        outcomes
            .iter()
            .all(|(_, report)| report.waiting() == Duration::ZERO)
    );
    let (from, to) = pair.primary.lock().unwrap().announced.unwrap();
    let inside: Vec<_> = primary
        .iter()
        .filter(|seen| seen.sent > from && seen.sent < to)
        .collect();
    assert!(
        inside.is_empty(),
        "no request to the primary inside its pause: {inside:?}"
    );
    // During the pause the calls went to the secondary; after it, back to the primary.
    assert!(secondary.len() >= 15, "{}", secondary.len());
    assert!(
        secondary
            .iter()
            .all(|seen| seen.sent < to + Duration::from_millis(150))
    );
    assert!(primary.iter().filter(|seen| seen.sent > to).count() >= 15);
    LIMITED.reset();
}

static BILLED: Upstream = Upstream::new("billed");
static PAID: Upstream = Upstream::new("paid");
static BILLED_FIRST: Upstreams = Upstreams::new(&[&BILLED, &PAID]);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_day_quota_on_the_primary_moves_to_the_secondary() {
    let pair = pair(&BILLED_FIRST, |_| Mode::OutOfQuota).await;
    let answered = call(&pair, &BILLED_FIRST, &Policy::AVAILABILITY, 1)
        .await
        .unwrap();
    assert_eq!(answered.upstream().name(), "paid");
    let (primary, secondary) = pair.seen();
    assert_eq!((primary.len(), secondary.len()), (1, 1));
}

static WRONG: Upstream = Upstream::new("wrong");
static ELSEWHERE: Upstream = Upstream::new("elsewhere");
static WRONG_FIRST: Upstreams = Upstreams::new(&[&WRONG, &ELSEWHERE]);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_400_does_not_move_and_is_returned_at_once() {
    let pair = pair(&WRONG_FIRST, |_| Mode::BadRequest).await;
    let gave_up = call(&pair, &WRONG_FIRST, &Policy::AVAILABILITY, 1)
        .await
        .unwrap_err();
    assert_eq!(gave_up.reason(), StopReason::Definitive);
    assert_eq!((gave_up.attempts(), gave_up.waited()), (1, Duration::ZERO));
    let (primary, secondary) = pair.seen();
    assert_eq!((primary.len(), secondary.len()), (1, 0));
}

static MOVE_A: Upstream = Upstream::new("move-a").gate_after(100, Duration::from_secs(10));
static MOVE_B: Upstream = Upstream::new("move-b");
static MOVE_SET: Upstreams = Upstreams::new(&[&MOVE_A, &MOVE_B]);
static ONE_ATTEMPT: Policy = Policy::AVAILABILITY.with_attempts(1);

/// A move the call cannot make (its attempts are spent) ends the call on the upstream it gave
/// up on: the report names that one, not the upstream it would have moved to, never tried.
#[tokio::test(start_paused = true)]
async fn a_move_the_call_cannot_make_names_only_the_upstream_it_gave_up_on() {
    let gave_up = Retry::new(&ONE_ATTEMPT)
        .across(&MOVE_SET)
        .run(async |to| {
            assert_eq!(to.name(), "move-a", "only the first is tried");
            Err::<(), _>(Class::Unavailable { retry_after: None })
        })
        .await
        .unwrap_err();
    assert!(gave_up.is_undetermined());
    let left: Vec<_> = gave_up
        .upstreams()
        .iter()
        .map(|left| (left.upstream(), left.why()))
        .collect();
    assert_eq!(left, [("move-a", LeftBecause::GaveUp)], "{gave_up}");
}

static DOWN_A: Upstream = Upstream::new("down-a").gate_after(100, Duration::from_secs(10));
static DOWN_B: Upstream = Upstream::new("down-b").gate_after(100, Duration::from_secs(10));
static BOTH_DOWN: Upstreams = Upstreams::new(&[&DOWN_A, &DOWN_B]);
/// Short waits, for a test on real sockets.
static SHORT: Policy = Policy::AVAILABILITY
    .with_base(Duration::from_millis(40))
    .with_attempts(6);

/// Every upstream down: the call moves, then waits its ladder once every upstream has failed,
/// and gives up with each upstream's failure in its report, undetermined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_upstream_down_a_call_waits_its_ladder_and_gives_up_with_each_failure() {
    let far = |start: Instant| Mode::OutUntil(start + Duration::from_secs(60));
    let start = Instant::now();
    let (a, primary) = serve(start, far(start), SECONDARY).await;
    let (b, secondary) = serve(start, far(start), SECONDARY).await;
    let pair = Pair {
        start,
        addrs: Arc::new(HashMap::from([("down-a", a), ("down-b", b)])),
        primary,
        secondary,
    };
    let turn = Turn::new(Duration::from_secs(30));
    let (outcome, report) = turn.run(call(&pair, &BOTH_DOWN, &SHORT, 1)).await;
    let gave_up = outcome.into_finished().unwrap().unwrap_err();
    assert!(gave_up.is_undetermined());
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 6 });
    // Three rounds of two: a move within each, a ladder's wait between them.
    assert_eq!((report.moves(), report.retries()), (3, 2), "{report}");
    let (primary, secondary) = pair.seen();
    assert_eq!((primary.len(), secondary.len()), (3, 3));
    let left: Vec<_> = gave_up
        .upstreams()
        .iter()
        .map(|left| {
            (
                left.upstream(),
                left.why(),
                left.failure().map(|(class, _)| class),
            )
        })
        .collect();
    let outage = Some(Class::Unavailable { retry_after: None });
    assert_eq!(
        left,
        [
            ("down-a", LeftBecause::Moved, outage),
            ("down-b", LeftBecause::GaveUp, outage),
        ]
    );
    let text = gave_up.to_string();
    assert!(
        text.contains("down-a is unavailable") && text.contains("down-b is unavailable"),
        "{text}"
    );
}

static ATTR_A: Upstream = Upstream::new("attr-a");
static ATTR_B: Upstream = Upstream::new("attr-b");
static ATTR_MODELS: Upstreams = Upstreams::new(&[&ATTR_A, &ATTR_B]);

/// The attribute's form: the function keeps its signature and reads its upstream.
#[retry(policy = "availability", across = ATTR_MODELS)]
async fn ask(
    client: &reqwest::Client,
    addrs: &HashMap<&'static str, SocketAddr>,
) -> Result<String, Failed> {
    send_to_current(client, addrs).await
}

/// One attempt: to the provider of the upstream the route chose (`Upstream::current()`),
/// whose name it returns.
async fn send_to_current(
    client: &reqwest::Client,
    addrs: &HashMap<&'static str, SocketAddr>,
) -> Result<String, Failed> {
    let to = Upstream::current().expect("inside a call across upstreams");
    let addr = addrs[to.name()];
    let response = client
        .post(format!("http://{addr}/v1/chat/completions"))
        .send()
        .await?;
    response.check_status().await?;
    Ok(to.name().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attribute_moves_across_its_upstreams() {
    let pair = pair(&ATTR_MODELS, |start| {
        Mode::OutUntil(start + Duration::from_secs(60))
    })
    .await;
    let client = reqwest::Client::new();
    let (outcome, report) = Turn::new(Duration::from_secs(30))
        .run(ask(&client, &pair.addrs))
        .await;
    assert_eq!(outcome.into_finished().unwrap().unwrap(), "attr-b");
    assert_eq!((report.moves(), report.attempts()), (1, 2), "{report}");
    let (primary, secondary) = pair.seen();
    assert_eq!((primary.len(), secondary.len()), (1, 1));
    ATTR_A.reset();
}

// A set named through the function's context (`Self::MODELS`, `T::MODELS`), which an item
// of the expansion cannot name: the call keeps it by pointer, with the same route.

static CTX_A: Upstream = Upstream::new("ctx-a");
static CTX_B: Upstream = Upstream::new("ctx-b");
static CTX_MODELS: Upstreams = Upstreams::new(&[&CTX_A, &CTX_B]);

struct Client;

impl Client {
    const MODELS: &'static Upstreams = &CTX_MODELS;

    #[retry(policy = "availability", across = Self::MODELS)]
    async fn ask(
        &self,
        client: &reqwest::Client,
        addrs: &HashMap<&'static str, SocketAddr>,
    ) -> Result<String, Failed> {
        send_to_current(client, addrs).await
    }
}

trait HasModels {
    const MODELS: &'static Upstreams;
}

impl HasModels for Client {
    const MODELS: &'static Upstreams = &CTX_MODELS;
}

#[retry(policy = "availability", across = T::MODELS)]
async fn ask_generic<T: HasModels>(
    client: &reqwest::Client,
    addrs: &HashMap<&'static str, SocketAddr>,
) -> Result<String, Failed> {
    send_to_current(client, addrs).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_named_through_self_or_a_type_parameter_moves_across_its_upstreams() {
    let pair = pair(&CTX_MODELS, |start| {
        Mode::OutUntil(start + Duration::from_secs(60))
    })
    .await;
    let client = reqwest::Client::new();
    // A set kept by pointer leaves the call's future `Send + 'static` where its arguments
    // are: each call runs in a task of its own on the multi-thread runtime.
    let (addrs, http) = (pair.addrs.clone(), client.clone());
    let (outcome, report) = tokio::spawn(async move {
        Turn::new(Duration::from_secs(30))
            .run(Client.ask(&http, &addrs))
            .await
    })
    .await
    .unwrap();
    assert_eq!(outcome.into_finished().unwrap().unwrap(), "ctx-b");
    assert_eq!((report.moves(), report.attempts()), (1, 2), "{report}");
    // The same through a type parameter (one failure does not close the primary's gate).
    let addrs = pair.addrs.clone();
    let (outcome, report) = tokio::spawn(async move {
        Turn::new(Duration::from_secs(30))
            .run(ask_generic::<Client>(&client, &addrs))
            .await
    })
    .await
    .unwrap();
    assert_eq!(outcome.into_finished().unwrap().unwrap(), "ctx-b");
    assert_eq!((report.moves(), report.attempts()), (1, 2), "{report}");
    let (primary, secondary) = pair.seen();
    assert_eq!((primary.len(), secondary.len()), (2, 2));
    CTX_A.reset();
}

mod streams {
    //! A stream across upstreams, against two event servers: it moves before its first
    //! content, and after it stays on the upstream that delivered.

    use super::*;
    use retry_runtime::GaveUp;
    use retry_runtime::http::{CallError, ModelEvents};
    use retry_runtime::sse::{self, Event};
    use retry_runtime::testing;
    use retry_tests::event_server::{EventServer, Part};

    fn delta(text: &str) -> String {
        format!(
            r#"{{"type":"content_block_delta","delta":{{"type":"text_delta","text":"{text}"}}}}"#
        )
    }

    const STOP: &str = r#"{"type":"message_stop"}"#;
    const OVERLOADED: &str =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;

    async fn send(request: reqwest::RequestBuilder) -> Result<ModelEvents, CallError> {
        Ok(request.send().await?.check_status().await?.events())
    }

    type Delivered = Vec<Result<Event, GaveUp<CallError>>>;

    /// One stream across `set`, whose two upstreams are `first` and `second`.
    async fn read(set: &'static Upstreams, first: &EventServer, second: &EventServer) -> Delivered {
        let http = reqwest::Client::new();
        let urls = HashMap::from([
            (set.upstreams()[0].name(), first.url()),
            (set.upstreams()[1].name(), second.url()),
        ]);
        let stream = Retry::new(&Policy::AVAILABILITY)
            .across(set)
            .stream(|to| send(http.post(&urls[to.name()])))
            .commit_when(sse::is_content)
            .complete_when(|event: &Event| event.data() == STOP);
        testing::scope(testing::collect(stream)).await.0
    }

    static T_CLAUDE: Upstream = Upstream::new("t-claude");
    static T_GPT: Upstream = Upstream::new("t-gpt");
    static T_MODELS: Upstreams = Upstreams::new(&[&T_CLAUDE, &T_GPT]);

    /// A stream across upstreams is `Send` and `'static` with what it owns: it runs on a task
    /// of its own on a multi-thread runtime, as a server's handler spawns one per request.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_across_upstreams_runs_on_a_spawned_task() {
        let overloaded = EventServer::start([vec![Part::event("error", OVERLOADED)]]).await;
        let healthy = EventServer::start([vec![Part::data(&delta("Hi")), Part::data(STOP)]]).await;
        let http = reqwest::Client::new();
        let urls = HashMap::from([("t-claude", overloaded.url()), ("t-gpt", healthy.url())]);
        let task = tokio::spawn(async move {
            let stream = Retry::new(&Policy::AVAILABILITY)
                .across(&T_MODELS)
                .stream(move |to| send(http.post(&urls[to.name()])))
                .commit_when(sse::is_content)
                .complete_when(|event: &Event| event.data() == STOP);
            testing::scope(testing::collect(stream)).await.0
        });
        let delivered = task.await.expect("the task ran");
        assert!(delivered.iter().all(Result::is_ok), "{delivered:?}");
        assert_eq!((overloaded.count("POST"), healthy.count("POST")), (1, 1));
        T_CLAUDE.reset();
    }

    static S_CLAUDE: Upstream = Upstream::new("s-claude");
    static S_GPT: Upstream = Upstream::new("s-gpt");
    static S_MODELS: Upstreams = Upstreams::new(&[&S_CLAUDE, &S_GPT]);

    #[tokio::test]
    async fn a_stream_that_fails_before_its_first_content_moves_to_the_next_upstream() {
        let overloaded = EventServer::start([vec![Part::event("error", OVERLOADED)]]).await;
        let healthy = EventServer::start([vec![
            Part::data(&delta("Hel")),
            Part::data(&delta("lo")),
            Part::data(STOP),
        ]])
        .await;
        let delivered = read(&S_MODELS, &overloaded, &healthy).await;
        assert!(delivered.iter().all(Result::is_ok), "{delivered:?}");
        assert_eq!(delivered.len(), 3);
        assert_eq!((overloaded.count("POST"), healthy.count("POST")), (1, 1));
        S_CLAUDE.reset();
    }

    static C_CLAUDE: Upstream = Upstream::new("c-claude");
    static C_GPT: Upstream = Upstream::new("c-gpt");
    static C_MODELS: Upstreams = Upstreams::new(&[&C_CLAUDE, &C_GPT]);

    #[tokio::test]
    async fn a_stream_cut_after_its_first_content_does_not_move() {
        let cut = EventServer::start([vec![Part::data(&delta("Hel")), Part::Cut]]).await;
        let other = EventServer::start([vec![Part::data(&delta("never"))]]).await;
        let delivered = read(&C_MODELS, &cut, &other).await;
        let Some(Err(gave_up)) = delivered.last() else {
            panic!("the stream ends in a give-up: {delivered:?}")
        };
        // Committed, on the upstream that delivered: nothing was sent elsewhere.
        assert_eq!(gave_up.reason(), StopReason::Committed);
        assert!(gave_up.is_undetermined());
        assert_eq!((cut.count("POST"), other.count("POST")), (1, 0));
        C_CLAUDE.reset();
    }

    static CR_CLAUDE: Upstream = Upstream::new("cr-claude");
    static CR_GPT: Upstream = Upstream::new("cr-gpt");
    static CR_MODELS: Upstreams = Upstreams::new(&[&CR_CLAUDE, &CR_GPT]);

    /// A committed stream that gives up reports the upstream that served it with its failure,
    /// never as "not tried".
    #[tokio::test]
    async fn a_committed_give_up_names_the_failure_on_the_upstream_that_served_it() {
        let cut = EventServer::start([vec![Part::data(&delta("Hel")), Part::Cut]]).await;
        let other = EventServer::start([vec![Part::data(&delta("never"))]]).await;
        let delivered = read(&CR_MODELS, &cut, &other).await;
        let Some(Err(gave_up)) = delivered.last() else {
            panic!("the stream ends in a give-up: {delivered:?}")
        };
        assert_eq!(gave_up.reason(), StopReason::Committed);
        let served = &gave_up.upstreams()[0];
        assert_eq!(served.upstream(), "cr-claude");
        assert!(served.failure().is_some(), "{gave_up}");
        assert!(!gave_up.to_string().contains("not tried"), "{gave_up}");
        CR_CLAUDE.reset();
    }

    static RS_CLAUDE: Upstream = Upstream::new("rs-claude");
    static RS_GPT: Upstream = Upstream::new("rs-gpt");
    static RS_MODELS: Upstreams = Upstreams::new(&[&RS_CLAUDE, &RS_GPT]);

    /// Restarted after its commit point, a stream stays on the upstream that delivered, even
    /// where the restart fails there before its first content: the caller never reads another
    /// model's text after its own.
    #[tokio::test]
    async fn a_stream_restarted_after_its_commit_point_never_moves() {
        let claude = EventServer::start([
            vec![Part::data(&delta("1")), Part::data(&delta("2")), Part::Cut],
            vec![Part::event("error", OVERLOADED)],
            vec![
                Part::data(&delta("1")),
                Part::data(&delta("2")),
                Part::data(STOP),
            ],
        ])
        .await;
        let gpt = EventServer::start([vec![Part::data(&delta("other")), Part::data(STOP)]]).await;
        let http = reqwest::Client::new();
        let urls = HashMap::from([("rs-claude", claude.url()), ("rs-gpt", gpt.url())]);
        let stream = Retry::new(&Policy::AVAILABILITY)
            .across(&RS_MODELS)
            .stream(|to| send(http.post(&urls[to.name()])))
            .commit_when(sse::is_content)
            .complete_when(|event: &Event| event.data() == STOP)
            .restart_after_commit(|| {});
        let delivered = testing::scope(testing::collect(stream)).await.0;
        assert!(delivered.iter().all(Result::is_ok), "{delivered:?}");
        assert_eq!((claude.count("POST"), gpt.count("POST")), (3, 0));
        RS_CLAUDE.reset();
    }

    static R_CLAUDE: Upstream = Upstream::new("r-claude");
    static R_GPT: Upstream = Upstream::new("r-gpt");
    static R_MODELS: Upstreams = Upstreams::new(&[&R_CLAUDE, &R_GPT]);

    /// A stream with event ids, cut after its first content: resumed from its cursor on the
    /// upstream that delivered, whose name the resume reads.
    #[tokio::test]
    async fn a_stream_cut_after_its_first_content_resumes_on_the_same_upstream() {
        let with_id = |id: &str, data: &str| Part::Bytes(format!("id: {id}\ndata: {data}\n\n"));
        let cut = EventServer::start([
            vec![with_id("1", &delta("Hel")), Part::Cut],
            vec![with_id("2", &delta("lo")), Part::data(STOP)],
        ])
        .await;
        let other = EventServer::start([vec![Part::data(&delta("never"))]]).await;
        let http = reqwest::Client::new();
        let urls = HashMap::from([("r-claude", cut.url()), ("r-gpt", other.url())]);
        let stream = Retry::new(&Policy::AVAILABILITY)
            .across(&R_MODELS)
            .stream(|to| send(http.post(&urls[to.name()])))
            .commit_when(sse::is_content)
            .complete_when(|event: &Event| event.data() == STOP)
            .resume(|from| {
                let to = Upstream::current().expect("a resume is made for its upstream");
                let request = http.get(&urls[to.name()]);
                let request = match from.last_event_id() {
                    Some(id) => request.header("last-event-id", id),
                    None => request,
                };
                send(request)
            });
        let delivered = testing::scope(testing::collect(stream)).await.0;
        assert!(delivered.iter().all(Result::is_ok), "{delivered:?}");
        assert_eq!(delivered.len(), 3);
        assert_eq!((cut.count("POST"), cut.count("GET")), (1, 1));
        assert_eq!(other.count("POST") + other.count("GET"), 0);
    }
}
