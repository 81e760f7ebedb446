use retry_runtime::http::{CallError, ResponseExt};
use retry_runtime::testing::{self, Act, FaultServer, Script, ScriptedEvent};
use retry_runtime::{Policy, Retry, sse};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Five events with IDs 1 to 5: the first answer is cut after three, the GET resumes.
    let events = ScriptedEvent::numbered(5);
    let script = Script::new([
        Act::events(events.clone()).cut_after(3),
        Act::resume(events),
    ]);
    let server = FaultServer::start(script).await.unwrap();
    let (http, url) = (&reqwest::Client::new(), &server.url());
    let stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| async move {
            Ok::<_, CallError>(http.post(url).send().await?.check_status().await?.events())
        })
        .commit_when(sse::is_content)
        .resume(|from| async move {
            let resume = http
                .get(url)
                .header("last-event-id", from.last_event_id().unwrap_or_default());
            Ok(resume.send().await?.check_status().await?.events())
        });
    let (delivered, _) = testing::scope(testing::collect(stream)).await;
    let ids: Vec<_> = delivered
        .iter()
        .map(|event| event.as_ref().unwrap().id().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5"]);
    let asked = server.script().asked();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[1].last_event_id.as_deref(), Some("3"));
}
