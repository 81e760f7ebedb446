use futures_util::StreamExt;
use retry_runtime::http::{HttpError, ResponseExt, StreamError};
use retry_runtime::{Classify, EndedEarly, GaveUp, Policy, Retry, sse};
use std::pin::pin;

#[derive(Debug, thiserror::Error, Classify)]
pub enum StreamFailure {
    #[error(transparent)]
    #[classify(from)] // the head said no: a status, with its Retry-After
    Http(#[from] HttpError),
    #[error(transparent)]
    #[classify(from)] // no head: refused, reset, timed out
    Request(#[from] reqwest::Error),
    #[error(transparent)]
    #[classify(from)] // after the head: an error event, a cut, a malformed frame
    Stream(#[from] StreamError),
    #[error(transparent)]
    #[classify(from)] // a preamble, then the end
    Ended(#[from] EndedEarly),
}

/// The reply's text: an `overloaded_error` before the first text is retried, and the caller
/// sees one attempt's events only.
pub async fn stream_reply(
    http: &reqwest::Client,
    url: &str,
    prompt: &str,
) -> Result<String, GaveUp<StreamFailure>> {
    let mut events = pin!(
        Retry::new(&Policy::AVAILABILITY)
            .named("model")
            .stream(|_attempt| {
                let request = http.post(url).body(prompt.to_owned());
                async move {
                    let response = request.send().await?.check_status().await?;
                    Ok::<_, StreamFailure>(response.events())
                }
            })
            .commit_when(sse::is_content)
    );
    let mut text = String::new();
    while let Some(event) = events.next().await {
        let event = event?;
        if event.event() == "content_block_delta" {
            let delta: serde_json::Value = serde_json::from_str(event.data()).unwrap_or_default();
            text.push_str(delta["delta"]["text"].as_str().unwrap_or_default());
        }
    }
    Ok(text)
}
