//! The README's headline example is the one this crate compiles (`src/headline.rs`).

#[test]
fn the_readme_headline_is_the_compiled_example() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../src/headline.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md must show tests/src/headline.rs verbatim in a ```rust block"
    );
}

#[test]
fn the_readmes_stream_example_is_the_compiled_one() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../src/stream_headline.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md must show tests/src/stream_headline.rs verbatim in a ```rust block"
    );
}

/// The README's "Testing code that retries" examples are the `testing` module's doctests
/// (files of the runtime's own, so the published crate carries them), shown verbatim.
#[test]
fn the_readmes_testing_examples_are_the_doctested_ones() {
    let readme = include_str!("../../README.md");
    let examples = [
        (
            "testing_rate_limit.rs",
            include_str!("../../retry-runtime/doc/testing_rate_limit.rs"),
        ),
        (
            "testing_stream_resume.rs",
            include_str!("../../retry-runtime/doc/testing_stream_resume.rs"),
        ),
        (
            "testing_fallback.rs",
            include_str!("../../retry-runtime/doc/testing_fallback.rs"),
        ),
    ];
    for (name, example) in examples {
        let block = format!("```rust\n{example}```");
        assert!(
            readme.contains(&block),
            "README.md must show retry-runtime/doc/{name} verbatim in a ```rust block"
        );
    }
}

#[test]
fn the_readmes_own_error_around_call_error_is_the_compiled_one() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../src/agent_error.rs");
    // The README shows the enum; the file adds the two `use` lines it needs.
    let shown = example
        .split_once("\n\n")
        .expect("the uses, then the enum")
        .1;
    let block = format!("```rust\n{shown}```");
    assert!(
        readme.contains(&block),
        "README.md must show tests/src/agent_error.rs (after its uses) verbatim in a ```rust block"
    );
}

/// The README's MCP tool call ("Resuming a stream"), compiled here as written.
#[path = "snippets/mcp_tool_call.rs"]
pub mod mcp_tool_call;

#[test]
fn the_readmes_mcp_tool_call_is_the_compiled_one() {
    let readme = include_str!("../../README.md");
    let example = include_str!("snippets/mcp_tool_call.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md must show tests/tests/snippets/mcp_tool_call.rs verbatim in a ```rust block"
    );
}

/// The README's tool call against a real SSE server on 127.0.0.1: the POST's stream is closed
/// after an error-level log, before the response, and the GET that resumes it brings the
/// response, on a stream the server keeps open.
#[tokio::test]
async fn the_readmes_mcp_tool_call_resumes_past_an_error_level_log_to_the_result() {
    use retry_tests::event_server::{EventServer, Part};
    use serde_json::{Value, json};

    let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "error", "data": "one step failed, retrying it"}});
    let result = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}});
    let server = EventServer::start([
        vec![
            Part::Bytes("id: prime-1\nretry: 20\ndata: \n\n".into()),
            Part::Bytes(format!("id: log-2\ndata: {log}\n\n")),
        ],
        vec![
            Part::Bytes(format!("id: result-3\ndata: {result}\n\n")),
            Part::Stall,
        ],
    ])
    .await;
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "count", "arguments": {"to": 3}}});
    let called = retry_runtime::testing::scope(mcp_tool_call::call_tool(
        &http,
        &server.url(),
        "session-1",
        &call,
    ))
    .await
    .0
    .expect("the call completes");
    assert_eq!(called, [log, result] as [Value; 2]);
    assert_eq!((server.count("POST"), server.count("GET")), (1, 1));
    assert_eq!(server.seen()[1].last_event_id.as_deref(), Some("log-2"));
}

/// The README's hint paragraph ("Built-in policies") states `availability`'s total cap as the
/// code applies it: a 429 with `Retry-After: 30` gives up at once, naming both figures, where
/// `transient`, or `availability` with a larger total, waits it out.
#[tokio::test]
async fn the_readmes_hint_paragraph_states_what_availabilitys_total_cap_does_to_a_30_s_hint() {
    use http::{HeaderMap, HeaderValue, StatusCode};
    use retry_runtime::http::HttpError;
    use retry_runtime::{Policy, Retry, StopReason, testing};
    use std::time::Duration;

    let readme = include_str!("../../README.md");
    let start = readme
        .find("A `Retry-After` hint (on a 429 or a 503)")
        .expect("the hint paragraph");
    let paragraph = &readme[start..start + readme[start..].find("\n\n").expect("its end")];
    let paragraph = paragraph.replace('\n', " ");
    let total = Policy::AVAILABILITY.max_total_wait().as_secs();
    let longest = Policy::AVAILABILITY.max_retry_after().as_secs();
    for said in [
        format!("`max_retry_after` ({longest} s)"),
        format!("waits at most {total} s"),
        "a 429 with `Retry-After: 30` is not retried at all".to_owned(),
        format!("(30 s wanted, {total} s the most)"),
        "`policy = \"transient\"`".to_owned(),
        "`Policy::AVAILABILITY.with_max_total_wait(Duration::from_secs(60))`".to_owned(),
        "`with_max_retry_after`".to_owned(),
    ] {
        assert!(
            paragraph.contains(&said),
            "the paragraph says {said:?}: {paragraph}"
        );
    }

    let mut headers = HeaderMap::new();
    headers.insert("retry-after", HeaderValue::from_static("30"));
    let limited = HttpError::new(StatusCode::TOO_MANY_REQUESTS, &headers, b"");
    // The first attempt is refused with the hint; a second would succeed.
    let call = async |policy: &Policy| {
        let (outcome, recorded) = testing::scope(Retry::new(policy).run(async |attempt| {
            if attempt == 1 {
                Err(limited.clone())
            } else {
                Ok(())
            }
        }))
        .await;
        let outcome = outcome.map_err(|gave_up| (gave_up.reason(), gave_up.attempts()));
        (outcome, recorded.waits().to_vec())
    };

    let (outcome, waits) = call(&Policy::AVAILABILITY).await;
    let reason = StopReason::RetryAfterTooLong {
        wanted: Duration::from_secs(30),
        max: Duration::from_secs(total),
    };
    assert_eq!(outcome, Err((reason, 1)));
    assert!(waits.is_empty());

    let wider = Policy::AVAILABILITY.with_max_total_wait(Duration::from_secs(60));
    for policy in [Policy::TRANSIENT, wider] {
        let (outcome, waits) = call(&policy).await;
        assert_eq!(outcome, Ok(()), "{}", policy.name());
        assert!(waits[0] >= Duration::from_secs(30), "{waits:?}");
    }
}

#[test]
fn the_readmes_upstream_example_is_the_compiled_one() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../src/upstream_headline.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md must show tests/src/upstream_headline.rs verbatim in a ```rust block"
    );
}

#[test]
fn the_readmes_fallback_example_is_the_compiled_one() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../src/fallback_headline.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md must show tests/src/fallback_headline.rs verbatim in a ```rust block"
    );
}
