use retry_runtime::http::{CallError, ResponseExt};
use retry_runtime::retry;
use retry_runtime::testing::{self, Act, FaultServer, Script};
use std::time::Duration;

#[retry(policy = "transient")]
async fn complete(url: &str) -> Result<String, CallError> {
    let response = reqwest::Client::new()
        .post(url)
        .body("hello")
        .send()
        .await?;
    Ok(response.check_status().await?.text().await?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let script = Script::new([Act::rate_limited(Duration::from_secs(30)), Act::ok("reply")]);
    let server = FaultServer::start(script).await.unwrap();
    let (reply, recorded) = testing::scope(complete(&server.url())).await;
    assert_eq!(reply.unwrap(), "reply");
    assert_eq!(server.script().requests(), 2);
    assert_eq!(recorded.waits(), [Duration::from_secs(30)]);
}
