//! A pacer's wait is a hold like any other, against a provider of our own counting on the
//! server: bounded by the turn (a wait past it ends the call at once, never sent), told as a
//! notice, recorded by a testing scope; and a waiting call dropped gives its slot back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use retry_runtime::http::ResponseExt;
use retry_runtime::notice::Action;
use retry_runtime::turn::TurnOutcome;
use retry_runtime::{PausedBy, Policy, Retry, StopReason, Turn, Upstream, testing};
use retry_tests::provider::{HeaderForm, Key, Provider};
use retry_tests::upstream_headline::ModelError;

/// A key of `rate` requests a second and a burst of one, in OpenAI's form.
async fn one_at_a_time(rate: f64) -> Provider {
    Provider::start(Key {
        requests_per_second: rate,
        request_burst: 1.0,
        tokens: None,
        form: HeaderForm::OpenAi,
        retry_after: Some(Duration::from_secs(1)),
        latency: Duration::ZERO,
    })
    .await
}

async fn call(
    upstream: &'static Upstream,
    http: &reqwest::Client,
    url: &str,
) -> Result<String, retry_runtime::GaveUp<ModelError>> {
    Retry::new(&Policy::AVAILABILITY)
        .upstream(upstream)
        .run(async |_| {
            let response = http.post(url).send().await?;
            Ok(response.check_status().await?.text().await?)
        })
        .await
}

static PAST_TURN: Upstream = Upstream::new("past-the-turn");

/// The key's one slot is spent and the next comes in a second: a call in a turn of 200 ms
/// ends at once (`Budget`, undetermined), and the server never sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pacing_wait_past_the_turn_ends_the_call_at_once() {
    let provider = one_at_a_time(1.0).await;
    let http = reqwest::Client::new();
    call(&PAST_TURN, &http, &provider.url())
        .await
        .expect("the key's one slot");
    let (outcome, _) = Turn::new(Duration::from_millis(200))
        .run(call(&PAST_TURN, &http, &provider.url()))
        .await;
    let TurnOutcome::Finished(Err(gave_up)) = outcome else {
        panic!("the call ends itself, before the turn: {outcome:?}");
    };
    assert!(
        matches!(gave_up.reason(), StopReason::Budget { .. }),
        "{gave_up:?}"
    );
    assert!(gave_up.is_undetermined());
    let ModelError::Paused(paused) = gave_up.error() else {
        panic!("{gave_up:?}");
    };
    assert_eq!(paused.reason(), PausedBy::Paced);
    assert_eq!(provider.seen().requests, 1, "never sent");
}

static DROPPED: Upstream = Upstream::new("dropped-waiter");

/// The waits the notices announce for `upstream`'s pacer, while `run` runs in a turn.
async fn paced_waits<F: std::future::Future>(run: F) -> (F::Output, Vec<Duration>) {
    let waits = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&waits);
    let turn = Turn::new(Duration::from_secs(60)).on_notice(move |notice| {
        if let Some(Action::Paced { wait, .. }) = notice.retry().map(|event| event.action) {
            sink.lock().unwrap().push(wait);
        }
    });
    let (outcome, _) = turn.run(run).await;
    let TurnOutcome::Finished(output) = outcome else {
        panic!("the turn ended first");
    };
    let waits = waits.lock().unwrap().clone();
    (output, waits)
}

/// A key of 2 a second, its one slot spent: a call waits for the next (reserved, 500 ms on)
/// and is dropped; the next call's wait is for that same slot, not the one after it (which a
/// slot kept by the dropped call would make about 1 s). The server sees two requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_waiting_call_gives_its_slot_back() {
    let provider = one_at_a_time(2.0).await;
    let http = reqwest::Client::new();
    let url = provider.url();
    call(&DROPPED, &http, &url)
        .await
        .expect("the key's one slot");
    let waiting = tokio::time::timeout(
        Duration::from_millis(50),
        paced_waits(call(&DROPPED, &http, &url)),
    );
    assert!(waiting.await.is_err(), "dropped while it waits");
    let (next, waits) = paced_waits(call(&DROPPED, &http, &provider.url())).await;
    next.expect("the slot the dropped call gave back");
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert!(waits[0] <= Duration::from_millis(500), "{waits:?}");
    assert_eq!(provider.seen().requests, 2);
    assert_eq!(provider.seen().refused, 0);
}

static SCOPED: Upstream = Upstream::new("scoped-pacer");

/// In a testing scope, a pacing wait is recorded, not slept, and the scope's clock moves on by
/// it: the call goes at its slot on that clock, and the notice says the wait in words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_testing_scope_records_a_pacing_wait() {
    let provider = one_at_a_time(1.0).await;
    let http = reqwest::Client::new();
    let said = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&said);
    let turn = Turn::new(Duration::from_secs(60)).on_notice(move |notice| {
        if let Some(event) = notice.retry() {
            sink.lock().unwrap().push(event.to_string());
        }
    });
    let ((outcome, _), recorded) = testing::scope(turn.run(async {
        call(&SCOPED, &http, &provider.url())
            .await
            .expect("the key's one slot");
        // The scope's clock skips the wait: this call is sent at once, and refused.
        call(&SCOPED, &http, &provider.url()).await
    }))
    .await;
    let TurnOutcome::Finished(_) = outcome else {
        panic!("the turn ended first");
    };
    let waits = recorded.waits();
    assert!(!waits.is_empty(), "{waits:?}");
    assert!(
        waits[0] > Duration::from_millis(500) && waits[0] <= Duration::from_secs(1),
        "{waits:?}"
    );
    let said = said.lock().unwrap();
    assert!(
        said[0].starts_with("scoped-pacer's rate limit: waiting "),
        "{said:?}"
    );
}

static SCRIPTED: Upstream = Upstream::new("scripted");
static SCRIPTED_ANTHROPIC: Upstream = Upstream::new("scripted-anthropic");

/// A fault script says the key's limits in each provider's form, and the pacer reads them:
/// after an answer that says none of 10 is left until 2 s on, the next call waits for the
/// next slot (recorded by the scope, not slept), and the server saw each call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_scripts_limits_in_each_form_pace_the_next_call() {
    use retry_runtime::testing::{Act, FaultServer, Script};
    for (upstream, first) in [
        (
            &SCRIPTED,
            Act::ok("one").with_openai_limits(10, 0, Duration::from_secs(2)),
        ),
        (
            &SCRIPTED_ANTHROPIC,
            Act::ok("one").with_anthropic_limits(10, 0, Duration::from_secs(2)),
        ),
    ] {
        let server = FaultServer::start(Script::new([first, Act::ok("two")]))
            .await
            .expect("a fault server");
        let http = reqwest::Client::new();
        let ((one, two), recorded) = testing::scope(async {
            let one = call(upstream, &http, &server.url()).await;
            let two = call(upstream, &http, &server.url()).await;
            (one, two)
        })
        .await;
        assert_eq!(one.unwrap(), "one");
        assert_eq!(two.unwrap(), "two");
        let waits = recorded.waits();
        assert_eq!(waits.len(), 1, "{waits:?}");
        // None of 10 left, whole in 2 s: 5 a second, the next slot a fifth of a second on.
        assert!(
            waits[0] > Duration::from_millis(150) && waits[0] <= Duration::from_millis(200),
            "{waits:?}"
        );
        assert_eq!(server.script().requests(), 2);
    }
}

static STREAMED: Upstream = Upstream::new("streamed");

/// A stream's opening response says the key's limits too: after a stream opened on an answer
/// that says none of 10 is left until 2 s on, the next stream on the upstream waits for the
/// key's next slot (recorded by the scope), and both deliver their events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streams_opening_response_paces_the_next_stream() {
    use futures_util::StreamExt;
    use retry_runtime::http::CallError;
    use retry_runtime::testing::{Act, FaultServer, Script, ScriptedEvent};
    // A stream's head says the limits: an answer whose body is the events.
    let wire: String = ScriptedEvent::numbered(2)
        .iter()
        .map(ScriptedEvent::to_wire)
        .collect();
    let events = || Act::ok(&wire).with_header("content-type", "text/event-stream");
    let first = events().with_openai_limits(10, 0, Duration::from_secs(2));
    let server = FaultServer::start(Script::new([first, events()]))
        .await
        .expect("a fault server");
    let http = reqwest::Client::new();
    let stream_once = || {
        let (http, url) = (http.clone(), server.url());
        async move {
            let open = |_| {
                let (http, url) = (http.clone(), url.clone());
                async move {
                    let response = http.post(&url).send().await?;
                    Ok::<_, CallError>(response.check_status().await?.events())
                }
            };
            let stream = Retry::new(&Policy::AVAILABILITY)
                .upstream(&STREAMED)
                .stream(open)
                .commit_when(retry_runtime::sse::is_content);
            let mut stream = std::pin::pin!(stream);
            let mut count = 0;
            while let Some(event) = stream.next().await {
                event.expect("an event");
                count += 1;
            }
            count
        }
    };
    let ((one, two), recorded) =
        testing::scope(async { (stream_once().await, stream_once().await) }).await;
    assert_eq!((one, two), (2, 2));
    let waits = recorded.waits();
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert!(
        waits[0] > Duration::from_millis(150) && waits[0] <= Duration::from_millis(200),
        "{waits:?}"
    );
    assert_eq!(server.script().requests(), 2);
}

static LAYERED: Upstream = Upstream::new("layered");

/// The tower layer reads each answer's rate-limit headers itself: after an answer that says
/// none of 10 is left until 2 s on, the next call through the layer waits for the key's next
/// slot (recorded by the scope), and the server sees each call once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tower_layer_hears_the_headers_and_paces_the_next_call() {
    use retry_runtime::testing::{Act, FaultServer, Script};
    use tower::{BoxError, Layer, Service, ServiceExt};
    let first = Act::ok("one").with_openai_limits(10, 0, Duration::from_secs(2));
    let server = FaultServer::start(Script::new([first, Act::ok("two")]))
        .await
        .expect("a fault server");
    let client = reqwest::Client::new();
    let inner = tower::service_fn(move |url: String| {
        let client = client.clone();
        async move { Ok::<_, BoxError>(client.get(url).send().await?) }
    });
    let layer =
        retry_runtime::tower::RetryLayer::new(Retry::new(&Policy::AVAILABILITY)).upstream(&LAYERED);
    let mut service = layer.layer(inner);
    let (texts, recorded) = testing::scope(async {
        let mut texts = Vec::new();
        for _ in 0..2 {
            let ready = service.ready().await.expect("the layer is ready");
            let response = ready.call(server.url()).await.expect("an answer");
            texts.push(response.text().await.expect("a body"));
        }
        texts
    })
    .await;
    assert_eq!(texts, ["one", "two"]);
    let waits = recorded.waits();
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert!(
        waits[0] > Duration::from_millis(150) && waits[0] <= Duration::from_millis(200),
        "{waits:?}"
    );
    assert_eq!(server.script().requests(), 2);
}
