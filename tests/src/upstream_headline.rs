use retry_runtime::http::{HttpError, ResponseExt};
use retry_runtime::{Class, Classify, GaveUp, Policy, Retry, Upstream, UpstreamPaused, retry};

/// One API key at one provider: what it says of one call holds for every call on it.
pub static OPENAI_KEY: Upstream = Upstream::new("openai");

/// A model call's failure.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The provider's answer.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// No answer.
    #[error(transparent)]
    Transport(#[from] reqwest::Error),
    /// An attempt the upstream held back past the call's end.
    #[error(transparent)]
    Paused(#[from] UpstreamPaused),
}

impl Classify for ModelError {
    fn classify(&self) -> Class {
        match self {
            ModelError::Http(error) => error.classify(),
            ModelError::Transport(error) => error.classify(),
            ModelError::Paused(paused) => paused.classify(),
        }
    }
}

/// Every call on the key waits out a `Retry-After` any of them was given, first tries
/// included; in an outage, one call probes while the others wait.
#[retry(policy = "availability", upstream = OPENAI_KEY)]
pub async fn complete(http: &reqwest::Client, url: &str) -> Result<String, ModelError> {
    let response = http.post(url).send().await?;
    Ok(response.check_status().await?.text().await?)
}

/// The same with the explicit API.
pub async fn complete_explicitly(
    http: &reqwest::Client,
    url: &str,
) -> Result<String, GaveUp<ModelError>> {
    let retry = Retry::new(&Policy::AVAILABILITY).upstream(&OPENAI_KEY);
    retry
        .run(async |_| {
            let response = http.post(url).send().await?;
            Ok(response.check_status().await?.text().await?)
        })
        .await
}
