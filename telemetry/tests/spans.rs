//! The spans of a retried call (feature `spans`), as a subscriber sees them: one `retry` span
//! per call that failed, the parent of its retry events and of one `retry.attempt` span per
//! later attempt; and, through the HTTP layers, OpenTelemetry's `http.request.resend_count` on
//! each resent request, on its span and in its extensions.
//!
//! One subscriber is installed for the whole binary, once, and each test reads what was
//! recorded on its own thread (per-thread default subscribers race with tracing's cache of
//! which call sites are enabled when tests run in parallel).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, Once, PoisonError};

use retry_runtime::http::ResendCount;
use retry_runtime::{Policy, Retry, testing};
use retry_tests::{Server, Step};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

type Fields = BTreeMap<String, String>;

/// A span or an event: its name (an event's is `event`), its fields, and its parent span's
/// index in the recording.
#[derive(Debug, Clone)]
struct Node {
    name: String,
    fields: Fields,
    parent: Option<usize>,
}

#[derive(Default)]
struct Tree {
    nodes: Vec<Node>,
    /// Each span's index in `nodes`, by its id.
    ids: BTreeMap<u64, usize>,
}

type Sink = Arc<Mutex<Tree>>;

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

fn record() -> Sink {
    static GLOBAL: Once = Once::new();
    GLOBAL.call_once(|| {
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(Recorder))
            .expect("no other global subscriber in these tests");
    });
    let sink = Sink::default();
    SINK.with(|slot| *slot.borrow_mut() = Some(Arc::clone(&sink)));
    sink
}

fn nodes(sink: &Sink) -> Vec<Node> {
    sink.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .nodes
        .clone()
}

struct Visitor<'a>(&'a mut Fields);

impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
}

struct Recorder;

fn with_sink(f: impl FnOnce(&mut Tree)) {
    if let Some(sink) = SINK.with(|slot| slot.borrow().clone()) {
        f(&mut sink.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().target() != "retry" {
            return;
        }
        let parent = ctx
            .span(id)
            .and_then(|span| span.parent())
            .map(|p| p.id().into_u64());
        let mut fields = Fields::new();
        attrs.record(&mut Visitor(&mut fields));
        with_sink(|tree| {
            let parent = parent.and_then(|p| tree.ids.get(&p).copied());
            tree.nodes.push(Node {
                name: attrs.metadata().name().to_owned(),
                fields,
                parent,
            });
            let index = tree.nodes.len() - 1;
            tree.ids.insert(id.into_u64(), index);
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        with_sink(|tree| {
            if let Some(&index) = tree.ids.get(&id.into_u64()) {
                values.record(&mut Visitor(&mut tree.nodes[index].fields));
            }
        });
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        if event.metadata().target() != "retry" {
            return;
        }
        let parent = ctx.event_span(event).map(|span| span.id().into_u64());
        let mut fields = Fields::new();
        fields.insert("level".into(), event.metadata().level().to_string());
        event.record(&mut Visitor(&mut fields));
        with_sink(|tree| {
            let parent = parent.and_then(|p| tree.ids.get(&p).copied());
            tree.nodes.push(Node {
                name: "event".into(),
                fields,
                parent,
            });
        });
    }
}

const FETCH: Retry = Retry::new(&Policy::AVAILABILITY).named("fetch");

#[tokio::test(flavor = "current_thread")]
async fn a_retried_call_is_one_retry_span_with_its_later_attempts_and_retry_events_inside() {
    let sink = record();
    let server = Server::start([Step::status(503), Step::status(503), Step::ok("reply")]).await;
    let client = server.client();

    let (result, _) = testing::scope(FETCH.run(async |_| client.get().await)).await;

    assert!(result.is_ok());
    let nodes = nodes(&sink);
    let calls: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i].name == "retry")
        .collect();
    assert_eq!(calls.len(), 1, "{nodes:#?}");
    let call = &nodes[calls[0]];
    for (field, value) in [
        ("op", "fetch"),
        ("policy", "availability"),
        ("first_failure", "unavailable"),
        ("attempts", "3"),
        ("outcome", "after_retries"),
    ] {
        assert_eq!(
            call.fields.get(field).map(String::as_str),
            Some(value),
            "{call:?}"
        );
    }
    assert!(call.fields.contains_key("waited_ms"), "{call:?}");
    let attempts: Vec<&Node> = nodes
        .iter()
        .filter(|node| node.name == "retry.attempt")
        .collect();
    let numbers: Vec<(&str, Option<&str>)> = attempts
        .iter()
        .map(|node| {
            assert_eq!(node.parent, Some(calls[0]), "{node:?}");
            (
                node.fields["attempt"].as_str(),
                node.fields.get("class").map(String::as_str),
            )
        })
        .collect();
    assert_eq!(numbers, [("2", Some("unavailable")), ("3", None)]);
    let retries: Vec<&Node> = nodes.iter().filter(|node| node.name == "event").collect();
    assert_eq!(retries.len(), 2, "{nodes:#?}");
    assert!(retries.iter().all(|event| event.parent == Some(calls[0])));
}

#[tokio::test(flavor = "current_thread")]
async fn a_first_try_success_opens_no_span() {
    let sink = record();
    let server = Server::start([Step::ok("reply")]).await;
    let client = server.client();

    let (result, _) = testing::scope(FETCH.run(async |_| client.get().await)).await;

    assert!(result.is_ok());
    assert!(nodes(&sink).is_empty(), "{:#?}", nodes(&sink));
}

#[tokio::test(flavor = "current_thread")]
async fn a_give_up_is_one_warn_event_inside_the_call_span() {
    let sink = record();
    let server = Server::start(Step::status(503).times(4)).await;
    let client = server.client();

    let (result, _) = testing::scope(FETCH.run(async |_| client.get().await)).await;

    assert!(result.is_err());
    let nodes = nodes(&sink);
    let warnings: Vec<&Node> = nodes
        .iter()
        .filter(|node| node.name == "event" && node.fields["level"] == "WARN")
        .collect();
    assert_eq!(warnings.len(), 1, "{nodes:#?}");
    assert_eq!(warnings[0].fields["reason"], "exhausted");
    let call = warnings[0].parent.map(|p| &nodes[p]);
    assert_eq!(call.map(|c| c.name.as_str()), Some("retry"));
    assert_eq!(
        call.and_then(|c| c.fields.get("outcome"))
            .map(String::as_str),
        Some("gave_up_undetermined")
    );
}

/// The resend counts on the `retry.attempt` spans, in order.
fn resend_counts(sink: &Sink) -> Vec<Option<String>> {
    nodes(sink)
        .into_iter()
        .filter(|node| node.name == "retry.attempt")
        .map(|node| node.fields.get("http.request.resend_count").cloned())
        .collect()
}

mod layers {
    use super::*;
    use retry_runtime::tower::RetryLayer;
    use tower::{Service, ServiceBuilder, ServiceExt};

    #[tokio::test(flavor = "current_thread")]
    async fn the_tower_layer_marks_the_second_and_third_attempts_with_their_resend_count() {
        let sink = record();
        let server = Server::start([Step::status(503), Step::status(503), Step::ok("reply")]).await;
        let url = server.url();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let client = reqwest::Client::new();
        let inner = {
            let seen = Arc::clone(&seen);
            tower::service_fn(move |request: http::Request<String>| {
                seen.lock()
                    .unwrap()
                    .push(request.extensions().get::<ResendCount>().copied());
                let client = client.clone();
                let url = url.clone();
                async move { client.get(url).send().await }
            })
        };
        let mut service = ServiceBuilder::new()
            .layer(RetryLayer::new(FETCH).http_requests())
            .service(inner);

        let request = http::Request::get("http://unused")
            .body(String::new())
            .unwrap();
        let (response, _) =
            testing::scope(async { service.ready().await.unwrap().call(request).await }).await;

        assert_eq!(response.unwrap().status(), 200);
        assert_eq!(
            *seen.lock().unwrap(),
            [None, Some(ResendCount(1)), Some(ResendCount(2))]
        );
        assert_eq!(
            resend_counts(&sink),
            [Some("1".to_owned()), Some("2".to_owned())],
            "the first attempt has no span; the second and third carry 1 and 2"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_reqwest_middleware_puts_the_resend_count_where_the_chain_reads_it() {
        use retry_runtime::reqwest_middleware::RetryMiddleware;

        let sink = record();
        let server = Server::start([Step::status(503), Step::status(503), Step::ok("reply")]).await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(RetryMiddleware::new(FETCH))
            .with(Seen(Arc::clone(&seen)))
            .build();

        let (response, _) = testing::scope(client.get(server.url()).send()).await;

        assert_eq!(response.unwrap().status(), 200);
        assert_eq!(
            *seen.lock().unwrap(),
            [None, Some(ResendCount(1)), Some(ResendCount(2))]
        );
        assert_eq!(
            resend_counts(&sink),
            [Some("1".to_owned()), Some("2".to_owned())]
        );
    }

    /// A streamed body that meets a 503 cannot be sent again: its give-up says so, and the
    /// call's outcome stays undetermined, as the 503 was not an answer.
    #[tokio::test(flavor = "current_thread")]
    async fn a_streamed_body_gives_up_not_resendable_and_undetermined() {
        use retry_runtime::reqwest_middleware::RetryMiddleware;

        let sink = record();
        let server = Server::start(Step::status(503).times(4)).await;
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(RetryMiddleware::new(FETCH))
            .build();
        let mut request =
            reqwest::Request::new(reqwest::Method::POST, server.url().parse().unwrap());
        *request.body_mut() = Some(reqwest::Body::wrap(String::from("streamed")));

        let (response, _) = testing::scope(client.execute(request)).await;

        assert_eq!(response.unwrap().status(), 503);
        let nodes = nodes(&sink);
        let warning = nodes
            .iter()
            .find(|node| node.name == "event" && node.fields["level"] == "WARN")
            .expect("a give-up warning");
        assert_eq!(warning.fields["reason"], "not_resendable");
        let call = warning.parent.map(|p| &nodes[p]);
        assert_eq!(
            call.and_then(|c| c.fields.get("outcome"))
                .map(String::as_str),
            Some("gave_up_undetermined")
        );
    }

    /// A middleware after the retry's, as reqwest-tracing would be: what each send carries.
    struct Seen(Arc<Mutex<Vec<Option<ResendCount>>>>);

    #[async_trait::async_trait]
    impl reqwest_middleware::Middleware for Seen {
        async fn handle(
            &self,
            request: reqwest::Request,
            extensions: &mut http::Extensions,
            next: reqwest_middleware::Next<'_>,
        ) -> reqwest_middleware::Result<reqwest::Response> {
            self.0
                .lock()
                .unwrap()
                .push(extensions.get::<ResendCount>().copied());
            next.run(request, extensions).await
        }
    }
}
