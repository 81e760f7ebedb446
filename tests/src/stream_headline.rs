use futures_util::StreamExt;
use retry_runtime::http::{CallError, ResponseExt};
use retry_runtime::{GaveUp, Policy, Retry, Turn, sse};
use std::{pin::pin, time::Duration};

/// The reply's text. An `overloaded_error` before the first text is retried, and the person
/// waiting is told; the caller sees one attempt's text only. `None` if the turn ran out.
pub async fn stream_reply(
    http: &reqwest::Client,
    url: &str,
    prompt: &str,
) -> Option<Result<String, GaveUp<CallError>>> {
    let turn = Turn::new(Duration::from_secs(180)).on_notice(|notice| eprintln!("{notice}"));
    let reply = async {
        let events = Retry::new(&Policy::AVAILABILITY)
            .named("model")
            .stream(|_attempt| async move {
                let response = http.post(url).body(prompt.to_owned()).send().await?;
                Ok::<_, CallError>(response.check_status().await?.events())
            })
            .commit_when(sse::is_content)
            .commit_timeout(Duration::from_secs(30));
        let (mut events, mut text) = (pin!(events), String::new());
        while let Some(event) = events.next().await {
            text.push_str(&event?.text().unwrap_or_default());
        }
        Ok(text)
    };
    turn.run(reply).await.0.into_finished()
}
