use retry_runtime::http::{HttpError, ResponseExt};
use retry_runtime::{Class, Classify, retry};

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(transparent)]
    Http(#[from] HttpError), // a status, with its Retry-After and the provider's error code
    #[error(transparent)]
    Request(#[from] reqwest::Error), // no answer: refused, reset, cut off, timed out
}

impl Classify for ModelError {
    fn classify(&self) -> Class {
        match self {
            ModelError::Http(error) => error.classify(),
            ModelError::Request(error) => error.classify(),
        }
    }
}

pub struct Model {
    pub http: reqwest::Client,
    pub url: String,
}

impl Model {
    #[retry(policy = "availability", attempts = 4, base_ms = 250, budget = "turn")]
    pub async fn complete(&self, prompt: &str) -> Result<String, ModelError> {
        let request = self.http.post(&self.url).body(prompt.to_owned());
        Ok(request.send().await?.check_status().await?.text().await?)
    }
}
