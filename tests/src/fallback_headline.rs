use retry_runtime::http::{CallError, ResponseExt};
use retry_runtime::{Answered, GaveUp, Policy, Retry, Upstream, Upstreams, retry};

/// Two models, in order of preference: each an `Upstream`, so their pauses and outage gates
/// are shared by every call.
pub static CLAUDE: Upstream = Upstream::new("claude");
pub static GPT: Upstream = Upstream::new("gpt");
pub static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);

/// The URL of each model's API.
fn url_of(model: &Upstream) -> &'static str {
    match model.name() {
        "claude" => "https://api.anthropic.com/v1/messages",
        _ => "https://api.openai.com/v1/chat/completions",
    }
}

/// Each attempt goes to the first model neither paused nor gated; an overload of claude moves
/// the call to gpt at once, with no wait. The function keeps its signature.
#[retry(policy = "availability", across = MODELS)]
pub async fn complete(http: &reqwest::Client, prompt: &str) -> Result<String, CallError> {
    let model = Upstream::current().expect("inside a call across MODELS");
    let response = http
        .post(url_of(model))
        .body(prompt.to_owned())
        .send()
        .await?;
    Ok(response.check_status().await?.text().await?)
}

/// The same with the explicit API: the attempt is given its model, and the answer says which
/// one answered.
pub async fn complete_explicitly(
    http: &reqwest::Client,
    prompt: &str,
) -> Result<Answered<String>, GaveUp<CallError>> {
    let retry = Retry::new(&Policy::AVAILABILITY).across(&MODELS);
    retry
        .run(async |model| {
            let response = http
                .post(url_of(model))
                .body(prompt.to_owned())
                .send()
                .await?;
            Ok(response.check_status().await?.text().await?)
        })
        .await
}
