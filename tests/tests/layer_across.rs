//! The layers' `across` on real loopback servers: the rewrite is a closure that captures its
//! configuration (each model's base URL), and a call fails over from the first server to the
//! second.

use std::collections::HashMap;
use std::time::Duration;

use retry_runtime::{Policy, Retry, Upstream, Upstreams, testing};
use retry_tests::{Server, Step};
use tower::{BoxError, Layer, Service, ServiceExt};

static CLAUDE: Upstream = Upstream::new("layer-across-claude");
static GPT: Upstream = Upstream::new("layer-across-gpt");
static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);

/// The path of a request, its base replaced by the base URL `bases` holds for `to`.
fn rebased(bases: &HashMap<&'static str, String>, url: &str, to: &'static Upstream) -> String {
    let path = url.split_once("/v1/").map_or("", |(_, path)| path);
    format!("{}v1/{path}", bases[to.name()])
}

/// The first model's server answers 503, which the second does not share: the call moves to
/// the second model at once, whose base URL only the rewrite's captured map knows.
#[tokio::test]
async fn a_tower_layers_rewrite_captures_each_models_base_url_and_fails_over_to_the_second() {
    let first = Server::start([Step::status(503)]).await;
    let second = Server::start([Step::ok("from the second")]).await;
    let bases: HashMap<&'static str, String> =
        HashMap::from([(CLAUDE.name(), first.url()), (GPT.name(), second.url())]);
    let client = reqwest::Client::new();
    let inner = tower::service_fn(move |url: String| {
        let client = client.clone();
        async move { Ok::<_, BoxError>(client.get(url).send().await?) }
    });
    let layer = retry_runtime::tower::RetryLayer::new(Retry::new(&Policy::AVAILABILITY))
        .across::<String, BoxError>(&MODELS, move |url: &mut String, to| {
            *url = rebased(&bases, url, to);
        });
    let mut service = layer.layer(inner);
    let call = service
        .ready()
        .await
        .expect("the layer is ready")
        .call("http://unrouted.invalid/v1/chat".to_owned());
    let (response, recorded) =
        testing::scope(tokio::time::timeout(Duration::from_secs(30), call)).await;
    let response = response
        .expect("the call ends")
        .expect("the second model answers");
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "from the second");
    assert_eq!((first.requests(), second.requests()), (1, 1));
    assert!(recorded.waits().is_empty(), "the move is at once");
}
