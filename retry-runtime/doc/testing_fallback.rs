use retry_runtime::http::{CallError, ResponseExt};
use retry_runtime::testing::{self, Act, FaultServer, Script};
use retry_runtime::{Upstream, Upstreams, retry};

static CLAUDE: Upstream = Upstream::new("claude");
static GPT: Upstream = Upstream::new("gpt");
static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);

#[retry(policy = "availability", across = MODELS)]
async fn complete(server: &str) -> Result<String, CallError> {
    let model = Upstream::current().expect("inside a call across MODELS");
    let response = reqwest::Client::new()
        .post(format!("{server}/{}", model.name()))
        .send()
        .await?;
    Ok(response.check_status().await?.text().await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let script = Script::new([])
        .on("/claude", [Act::anthropic_overloaded()])
        .on("/gpt", [Act::ok("from gpt")]);
    let server = FaultServer::start(script).await.unwrap();
    let (reply, recorded) = testing::scope(complete(&server.url())).await;
    assert_eq!(reply.unwrap(), "from gpt");
    let paths: Vec<_> = server
        .script()
        .asked()
        .into_iter()
        .map(|asked| asked.path)
        .collect();
    assert_eq!(paths, ["/claude", "/gpt"]);
    assert!(
        recorded.waits().is_empty(),
        "an overload moves the call at once, with no wait"
    );
}
