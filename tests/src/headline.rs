use retry_runtime::http::{HttpError, ResponseExt};
use retry_runtime::{Classify, retry};

#[derive(Debug, thiserror::Error, Classify)]
pub enum ModelError {
    #[error(transparent)]
    #[classify(from)] // a status, with its Retry-After and the provider's error code
    Http(#[from] HttpError),
    #[error(transparent)]
    #[classify(from)] // no answer: refused, reset, cut off, timed out
    Request(#[from] reqwest::Error),
}

#[retry(policy = "availability", attempts = 4, base_ms = 250, budget = "turn")]
pub async fn complete(
    http: &reqwest::Client,
    url: &str,
    prompt: &str,
) -> Result<String, ModelError> {
    let request = http.post(url).body(prompt.to_owned());
    Ok(request.send().await?.check_status().await?.text().await?)
}
