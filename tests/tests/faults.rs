//! Issue 47: each fault a script can play, through the real fault server with reqwest, read
//! by the library's own classifiers (`check_status`, `Classify for reqwest::Error`, the
//! model-stream decoder, the gRPC table): the class and the hint the library takes from it,
//! so the scripts and the table cannot drift apart.

use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use retry_runtime::http::{HttpError, ModelEvents, ResponseExt, StreamError};
use retry_runtime::testing::{self, Act, FaultServer, Script, ScriptedEvent};
use retry_runtime::{Class, Classify, Policy, Retry, grpc};

fn client() -> reqwest::Client {
    client_timing_out_after(Duration::from_secs(30))
}

/// A client whose requests time out after `timeout`: a short real duration ends a hang.
fn client_timing_out_after(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .timeout(timeout)
        .build()
        .expect("build a reqwest client")
}

/// The attempt's timeout in the tests of a hang and a stall: a few hundred milliseconds.
const SHORT: Duration = Duration::from_millis(300);

async fn server(acts: impl IntoIterator<Item = Act>) -> FaultServer {
    FaultServer::start(Script::new(acts))
        .await
        .expect("start a fault server")
}

/// The `HttpError` the library makes of one scripted answer.
async fn status_error(act: Act) -> HttpError {
    let server = server([act]).await;
    let response = client().get(server.url()).send().await.expect("an answer");
    let error = response.check_status().await.expect_err("a failed status");
    assert_eq!(server.script().requests(), 1);
    error
}

fn rate_limited(seconds: f64) -> Class {
    Class::RateLimited {
        retry_after: Some(Duration::from_secs_f64(seconds)),
    }
}

#[tokio::test]
async fn a_429_with_retry_after_seconds_is_rate_limited_for_them() {
    let error = status_error(Act::rate_limited(Duration::from_secs(30))).await;
    assert_eq!(error.classify(), rate_limited(30.0));
}

#[tokio::test]
async fn a_429_with_retry_after_as_a_date_is_rate_limited_until_it() {
    let when = SystemTime::now() + Duration::from_secs(120);
    let error = status_error(Act::rate_limited_until(when)).await;
    let Class::RateLimited {
        retry_after: Some(hint),
    } = error.classify()
    else {
        panic!("a rate limit with a hint, got {:?}", error.classify());
    };
    // An HTTP date has whole seconds: the hint is within a second or two of 120 s.
    assert!(
        hint > Duration::from_secs(117) && hint <= Duration::from_secs(120),
        "{hint:?}"
    );
}

#[tokio::test]
async fn a_429_with_retry_after_ms_is_rate_limited_for_them() {
    let error = status_error(Act::rate_limited_ms(1500)).await;
    assert_eq!(error.classify(), rate_limited(1.5));
}

#[tokio::test]
async fn anthropics_529_overloaded_error_is_unavailable() {
    let error = status_error(Act::anthropic_overloaded()).await;
    assert_eq!(error.classify(), Class::Unavailable { retry_after: None });
    assert_eq!(error.error_type(), Some("overloaded_error"));
}

#[tokio::test]
async fn openais_rate_limit_exceeded_is_rate_limited_without_a_hint() {
    let error = status_error(Act::openai_rate_limit_exceeded()).await;
    assert_eq!(error.classify(), Class::RateLimited { retry_after: None });
    assert_eq!(error.error_code(), Some("rate_limit_exceeded"));
}

#[tokio::test]
async fn openais_insufficient_quota_is_quota_exhausted() {
    let error = status_error(Act::openai_insufficient_quota()).await;
    assert_eq!(error.classify(), Class::QuotaExhausted);
}

#[tokio::test]
async fn googles_resource_exhausted_with_retry_info_is_rate_limited_for_its_delay() {
    let error = status_error(Act::google_retry_info(Duration::from_secs(7))).await;
    assert_eq!(error.classify(), rate_limited(7.0));
}

#[tokio::test]
async fn googles_per_day_quota_failure_is_quota_exhausted() {
    let error = status_error(Act::google_daily_quota()).await;
    assert_eq!(error.classify(), Class::QuotaExhausted);
    assert!(error.quota_id().is_some_and(|id| id.contains("PerDay")));
}

#[tokio::test]
async fn a_context_overflow_is_definitive_and_says_so() {
    let error = status_error(Act::context_overflow()).await;
    assert_eq!(error.classify(), Class::Definitive);
    assert!(error.is_context_overflow());
}

#[tokio::test]
async fn a_503_with_no_body_is_unavailable_without_a_hint() {
    let error = status_error(Act::unavailable()).await;
    assert_eq!(error.classify(), Class::Unavailable { retry_after: None });
    assert_eq!(error.body(), "");
}

#[tokio::test]
async fn a_grpc_status_with_pushback_is_read_by_the_grpc_table() {
    let server = server([Act::grpc_status(8, Some(Duration::from_millis(1500)))]).await;
    let response = client().get(server.url()).send().await.expect("an answer");
    let header = |name: &str| response.headers().get(name).expect(name).as_bytes();
    let code = grpc::parse_code(std::str::from_utf8(header("grpc-status")).unwrap()).unwrap();
    let pushback = grpc::parse_pushback(header("grpc-retry-pushback-ms"));
    assert_eq!(
        grpc::classify_status(code, Some(pushback), None, false),
        rate_limited(1.5)
    );
}

#[tokio::test]
async fn a_refused_connection_is_transport() {
    let server = server([Act::refused()]).await;
    let error = client()
        .get(server.url())
        .send()
        .await
        .expect_err("no answer");
    assert_eq!(error.classify(), Class::Transport);
    assert_eq!(server.script().requests(), 1);
}

#[tokio::test]
async fn a_reset_mid_body_is_transport() {
    let server = server([Act::reset_mid_body()]).await;
    let response = client().get(server.url()).send().await.expect("a 200 head");
    assert_eq!(response.status(), 200);
    let error = response.text().await.expect_err("the body cut off");
    assert_eq!(error.classify(), Class::Transport);
}

#[tokio::test]
async fn a_hang_ends_at_the_attempts_timeout_as_a_timeout() {
    let server = server([Act::hang()]).await;
    let error = client_timing_out_after(SHORT)
        .get(server.url())
        .send()
        .await
        .expect_err("no answer");
    assert_eq!(error.classify(), Class::Timeout);
    // The client's timeout dropped the hung connection, and the server saw it go.
    server.wait_for_closed(1).await;
}

#[tokio::test]
async fn a_200_with_a_body_is_the_answer() {
    let server = server([Act::ok("reply")]).await;
    let response = client().get(server.url()).send().await.unwrap();
    let body = response.check_status().await.unwrap().text().await.unwrap();
    assert_eq!(body, "reply");
}

/// The events of one scripted stream as the library decodes them, and how it ended: `None`
/// for a clean end, else the error's class.
async fn read_stream(server: &FaultServer, last_event_id: Option<&str>, path: &str) -> Read {
    read_with(&client(), server, last_event_id, path).await
}

async fn read_with(
    client: &reqwest::Client,
    server: &FaultServer,
    last_event_id: Option<&str>,
    path: &str,
) -> Read {
    let mut request = client.get(format!("{}{path}", server.url()));
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = request.send().await.expect("a 200 head");
    let mut events: ModelEvents = response.check_status().await.unwrap().events();
    let mut read = Read::default();
    while let Some(item) = events.next().await {
        match item {
            Ok(event) => read.ids.push(event.id().unwrap_or("-").to_owned()),
            Err(error) => {
                read.ended = Some(StreamError::classify(&error));
                break;
            }
        }
    }
    read
}

#[derive(Debug, Default, PartialEq)]
struct Read {
    ids: Vec<String>,
    ended: Option<Class>,
}

fn read(ids: &[&str], ended: Option<Class>) -> Read {
    Read {
        ids: ids.iter().map(|id| (*id).to_owned()).collect(),
        ended,
    }
}

#[tokio::test]
async fn sse_events_arrive_in_order_and_end_cleanly() {
    let server = server([Act::events(ScriptedEvent::numbered(3))]).await;
    assert_eq!(
        read_stream(&server, None, "/").await,
        read(&["1", "2", "3"], None)
    );
}

#[tokio::test]
async fn an_error_event_before_content_is_classified_by_the_table() {
    let server = server([Act::overloaded_event()]).await;
    let events = read_stream(&server, None, "/").await;
    assert_eq!(
        events,
        read(&["-"], Some(Class::Unavailable { retry_after: None }))
    );
}

#[tokio::test]
async fn a_cut_after_three_events_with_ids_is_transport_after_the_third() {
    let server = server([Act::events(ScriptedEvent::numbered(5)).cut_after(3)]).await;
    assert_eq!(
        read_stream(&server, None, "/").await,
        read(&["1", "2", "3"], Some(Class::Transport))
    );
}

#[tokio::test]
async fn a_cut_after_two_events_without_ids_is_transport() {
    let events = [
        ScriptedEvent::data("{}"),
        ScriptedEvent::data("{}"),
        ScriptedEvent::data("{}"),
    ];
    let server = server([Act::events(events).cut_after(2)]).await;
    assert_eq!(
        read_stream(&server, None, "/").await,
        read(&["-", "-"], Some(Class::Transport))
    );
}

#[tokio::test]
async fn a_stall_after_two_events_is_a_timeout_of_the_client() {
    let server = server([Act::events(ScriptedEvent::numbered(5)).stall_after(2)]).await;
    let client = client_timing_out_after(SHORT);
    assert_eq!(
        read_with(&client, &server, None, "/").await,
        read(&["1", "2"], Some(Class::Timeout))
    );
    // The client's timeout dropped the stalled connection.
    server.wait_for_closed(1).await;
}

#[tokio::test]
async fn an_empty_200_stream_ends_with_no_event() {
    let server = server([Act::empty_stream()]).await;
    assert_eq!(read_stream(&server, None, "/").await, read(&[], None));
}

#[tokio::test]
async fn a_graceful_close_before_completion_ends_cleanly_early() {
    let server = server([Act::events(ScriptedEvent::numbered(5)).close_after(2)]).await;
    assert_eq!(
        read_stream(&server, None, "/").await,
        read(&["1", "2"], None)
    );
}

#[tokio::test]
async fn a_resume_honours_last_event_id() {
    let server = server([Act::resume(ScriptedEvent::numbered(5))]).await;
    assert_eq!(
        read_stream(&server, Some("3"), "/").await,
        read(&["4", "5"], None)
    );
    assert_eq!(
        server.script().asked()[0].last_event_id.as_deref(),
        Some("3")
    );
}

#[tokio::test]
async fn a_resume_honours_starting_after() {
    let events = (0..4).map(|n| {
        ScriptedEvent::new(
            "response.output_text.delta",
            &format!(
                r#"{{"type":"response.output_text.delta","sequence_number":{n},"delta":"{n}"}}"#
            ),
        )
        .with_id(&n.to_string())
    });
    let server = server([Act::resume(events)]).await;
    let path = "/v1/responses/resp_1?stream=true&starting_after=1";
    assert_eq!(
        read_stream(&server, None, path).await,
        read(&["2", "3"], None)
    );
    assert_eq!(server.script().asked()[0].path, path);
}

#[tokio::test]
async fn a_resume_that_replays_the_last_event_starts_at_the_cursor() {
    let server = server([Act::resume_replaying_last(ScriptedEvent::numbered(5))]).await;
    assert_eq!(
        read_stream(&server, Some("3"), "/").await,
        read(&["3", "4", "5"], None)
    );
}

/// What the server records, on the scope's clock: a 30 s `Retry-After` waited out in a scope
/// puts 30 s between the two requests, in milliseconds of real time.
#[tokio::test]
async fn each_request_is_recorded_with_its_method_path_body_and_scope_time() {
    let (body, recorded) = testing::scope(async {
        let server = server([Act::rate_limited(Duration::from_secs(30)), Act::ok("reply")]).await;
        let http = client();
        let url = format!("{}/v1/messages", server.url());
        let retry = Retry::new(&Policy::TRANSIENT);
        let body = retry
            .run(async |_| {
                let response = http
                    .post(&url)
                    .body("prompt")
                    .send()
                    .await
                    .map_err(drop_class)?;
                let response = response.check_status().await.map_err(|e| e.classify())?;
                response.text().await.map_err(drop_class)
            })
            .await
            .unwrap();
        let asked = server.script().asked();
        assert_eq!(asked.len(), 2);
        assert_eq!(
            (asked[0].method.as_str(), asked[0].path.as_str()),
            ("POST", "/v1/messages")
        );
        assert_eq!(asked[1].body, "prompt");
        assert!(asked[1].at - asked[0].at >= Duration::from_secs(30));
        body
    })
    .await;
    assert_eq!(body, "reply");
    assert_eq!(recorded.waits(), [Duration::from_secs(30)]);
}

fn drop_class(error: reqwest::Error) -> Class {
    error.classify()
}

#[tokio::test]
async fn a_script_per_path_answers_each_path_from_its_own_acts_then_the_default() {
    let script = Script::new([Act::ok("any")])
        .on("/a", [Act::unavailable()])
        .otherwise(Act::status(418));
    let server = FaultServer::start(script).await.unwrap();
    let status = async |path: &str| {
        let response = client().get(format!("{}{path}", server.url())).send().await;
        response.unwrap().status().as_u16()
    };
    assert_eq!(status("/a?x=1").await, 503);
    assert_eq!(status("/a").await, 200);
    assert_eq!(status("/b").await, 418);
}

#[tokio::test]
async fn the_closure_adapter_plays_the_same_script_in_process() {
    let script = Script::new([
        Act::refused(),
        Act::anthropic_overloaded(),
        Act::ok("reply"),
    ]);
    let (reply, recorded) = testing::scope(
        Retry::new(&Policy::AVAILABILITY).run(async |_| script.call("claude").await),
    )
    .await;
    assert_eq!(reply.unwrap(), "reply");
    assert_eq!(recorded.waits(), [250, 500].map(Duration::from_millis));
    let asked = script.asked();
    assert_eq!(asked.len(), 3);
    // The waits skipped, and the little real time the attempts took.
    let between = asked[2].at - asked[0].at;
    assert!(between >= Duration::from_millis(750) && between < Duration::from_secs(1));
}

/// The tower layer plays the same script in front of a service, inside the retry layer, and
/// hands the service the requests past it.
#[tokio::test]
async fn the_tower_layer_answers_from_the_script_then_passes_requests_on() {
    use retry_runtime::testing::FaultLayer;
    use retry_runtime::tower::RetryLayer;
    use std::sync::atomic::{AtomicU32, Ordering};
    use tower::{Service, ServiceExt};

    static REAL: AtomicU32 = AtomicU32::new(0);
    let script = Script::new([Act::anthropic_overloaded(), Act::refused()]);
    let real = tower::service_fn(|_: http::Request<()>| async {
        REAL.fetch_add(1, Ordering::SeqCst);
        Ok::<_, tower::BoxError>(http::Response::new(String::from("reply")))
    });
    let mut service = tower::ServiceBuilder::new()
        .layer(RetryLayer::new(Retry::new(&Policy::AVAILABILITY)))
        .layer(FaultLayer::new(script.clone()))
        .service(real);
    let request = http::Request::post("/v1/messages").body(()).unwrap();
    let (response, recorded) = testing::scope(service.ready().await.unwrap().call(request)).await;
    assert_eq!(response.unwrap().into_body(), "reply");
    assert_eq!(REAL.load(Ordering::SeqCst), 1);
    assert_eq!(recorded.waits(), [250, 500].map(Duration::from_millis));
    let asked = script.asked();
    assert_eq!(asked.len(), 3);
    assert_eq!(
        (asked[2].method.as_str(), asked[2].path.as_str()),
        ("POST", "/v1/messages")
    );
    assert!(asked[2].at - asked[0].at >= Duration::from_millis(750));
}

#[tokio::test]
async fn the_closure_adapter_reads_a_grpc_status_with_the_grpc_table() {
    let script = Script::new([Act::grpc_status(14, Some(Duration::from_millis(700)))]);
    let error = script.call("grpc").await.unwrap_err();
    assert_eq!(
        error.classify(),
        Class::Unavailable {
            retry_after: Some(Duration::from_millis(700))
        }
    );
}

/// Dropping the server closes the connections it still holds open: a hang ends for its client
/// (with no timeout of its own) when the test is done with the server.
#[tokio::test]
async fn dropping_the_server_closes_a_hung_connection() {
    let server = server([Act::hang()]).await;
    let url = server.url();
    let request = tokio::spawn(async move { client().post(url).send().await });
    server.script().wait_for_requests(1).await;
    drop(server);
    let answered = tokio::time::timeout(Duration::from_secs(10), request)
        .await
        .expect("the connection closes when the server is dropped")
        .expect("the request's task ran");
    assert!(answered.is_err(), "{answered:?}");
}
