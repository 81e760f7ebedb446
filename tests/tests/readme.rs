//! The README and the guide (`retry-runtime/src/guide/*.md`, rustdoc pages of the runtime)
//! show the examples this crate compiles (`src/*.rs`, `tests/snippets/*.rs`) verbatim, and the
//! README's links resolve: each relative link to a file or a heading that exists, each docs.rs
//! link to a module or item the runtime has.

use std::path::Path;

const README: &str = include_str!("../../README.md");

/// A guide chapter's text: `retry-runtime/src/guide/{name}.md`.
fn chapter(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../retry-runtime/src/guide")
        .join(format!("{name}.md"));
    std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("no chapter {}", path.display()))
}

/// The ```rust blocks of a Markdown text (`rust`, `rust,ignore`, `rust,no_run`, ...), each as a
/// reader sees it: without rustdoc's hidden lines (`# ` at the start, or `#` alone).
fn shown_rust_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line.starts_with("```rust") => current = Some(String::new()),
            Some(block) if line.starts_with("```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                let trimmed = line.trim_start();
                if !(trimmed == "#" || trimmed.starts_with("# ")) {
                    block.push_str(line);
                    block.push('\n');
                }
            }
            None => {}
        }
    }
    blocks
}

/// Fails unless `text` (named `name`) shows `example` as one whole ```rust block.
fn assert_shows(name: &str, text: &str, example: &str, from: &str) {
    assert!(
        shown_rust_blocks(text).iter().any(|block| block == example),
        "{name} must show {from} verbatim in a ```rust block"
    );
}

#[test]
fn the_readmes_headline_is_the_compiled_example() {
    let example = include_str!("../src/headline.rs");
    assert_shows("README.md", README, example, "tests/src/headline.rs");
}

#[test]
fn the_streams_chapters_example_is_the_compiled_one() {
    let example = include_str!("../src/stream_headline.rs");
    assert_shows(
        "guide/streams.md",
        &chapter("streams"),
        example,
        "tests/src/stream_headline.rs",
    );
}

/// The testing chapter's examples (the README's "Testing code that retries" once) are the
/// `testing` module's doctests (files of the runtime's own, so the published crate carries
/// them), shown verbatim.
#[test]
fn the_testing_chapters_examples_are_the_doctested_ones() {
    for name in [
        "testing_rate_limit.rs",
        "testing_stream_resume.rs",
        "testing_fallback.rs",
    ] {
        let path = format!("retry-runtime/doc/{name}");
        let example = std::fs::read_to_string(format!("{}/../{path}", env!("CARGO_MANIFEST_DIR")))
            .expect("the example's file");
        assert_shows("guide/testing.md", &chapter("testing"), &example, &path);
    }
}

#[test]
fn the_streams_chapters_own_error_around_call_error_is_the_compiled_one() {
    let example = include_str!("../src/agent_error.rs");
    // The chapter shows the enum; the file adds the two `use` lines it needs (hidden there).
    let shown = example
        .split_once("\n\n")
        .expect("the uses, then the enum")
        .1;
    let from = "tests/src/agent_error.rs (after its uses)";
    assert_shows("guide/streams.md", &chapter("streams"), shown, from);
}

/// The layers chapter's async-openai example is the README's `# async-openai` Install block,
/// which `tests/tests/install.rs` builds (async-openai is no dependency of the runtime).
#[test]
fn the_layers_chapters_async_openai_example_is_the_readmes_built_block() {
    let start = README
        .find("```toml\n# async-openai\n")
        .expect("the async-openai block");
    let block = shown_rust_blocks(&README[start..]).remove(0);
    assert!(block.contains("with_http_service"), "{block}");
    assert_shows(
        "guide/layers.md",
        &chapter("layers"),
        &block,
        "the README's block",
    );
}

/// The resume chapter's MCP tool call, compiled here as written (and by the chapter's doctest).
#[path = "snippets/mcp_tool_call.rs"]
pub mod mcp_tool_call;

#[test]
fn the_resume_chapters_mcp_tool_call_is_the_compiled_one() {
    let example = include_str!("snippets/mcp_tool_call.rs");
    let from = "tests/tests/snippets/mcp_tool_call.rs";
    assert_shows("guide/resume.md", &chapter("resume"), example, from);
}

/// The resume chapter's tool call against a real SSE server on 127.0.0.1: the POST's stream is closed
/// after an error-level log, before the response, and the GET that resumes it brings the
/// response, on a stream the server keeps open.
#[tokio::test]
async fn the_resume_chapters_mcp_tool_call_resumes_past_an_error_level_log_to_the_result() {
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

/// The policies chapter's hint paragraph states `availability`'s total cap as the
/// code applies it: a 429 with `Retry-After: 30` gives up at once, naming both figures, where
/// `transient`, or `availability` with a larger total, waits it out.
#[tokio::test]
async fn the_policies_chapters_hint_paragraph_states_availabilitys_total_cap_on_a_30_s_hint() {
    use http::{HeaderMap, HeaderValue, StatusCode};
    use retry_runtime::http::HttpError;
    use retry_runtime::{Policy, Retry, StopReason, testing};
    use std::time::Duration;

    let policies = chapter("policies");
    let start = policies
        .find("A `Retry-After` hint (on a 429 or a 503)")
        .expect("the hint paragraph");
    let paragraph = &policies[start..start + policies[start..].find("\n\n").expect("its end")];
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
fn the_upstreams_chapters_example_is_the_compiled_one() {
    let example = include_str!("../src/upstream_headline.rs");
    let from = "tests/src/upstream_headline.rs";
    assert_shows("guide/upstreams.md", &chapter("upstreams"), example, from);
}

#[test]
fn the_fallback_chapters_example_is_the_compiled_one() {
    let example = include_str!("../src/fallback_headline.rs");
    let from = "tests/src/fallback_headline.rs";
    assert_shows("guide/fallback.md", &chapter("fallback"), example, from);
}

// ---------------------------------------------------------------------------------------------
// The README's links
// ---------------------------------------------------------------------------------------------

/// Where the README's docs.rs links start: the runtime's crate root on docs.rs.
const DOCS_RS: &str = "https://docs.rs/retry-runtime/latest/retry_runtime/";

/// The public surface `tests/tests/public_api.rs` checks against rustdoc's own output: one item
/// a line, `kind path` (`mod guide::streams`, `struct Upstream`).
const PUBLIC_API: &str = include_str!("public_api.rs");

/// The lines of a Markdown text outside its fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut inside = false;
    text.lines()
        .filter(|line| {
            if line.starts_with("```") {
                inside = !inside;
                return false;
            }
            !inside
        })
        .collect()
}

/// The anchor GitHub and rustdoc give a heading: its text (a link's text, without backticks)
/// in lower case, each space a `-`, every other character but letters, digits, `-` and `_`
/// dropped.
fn anchor(heading: &str) -> String {
    let text = heading.trim_start_matches('#').trim();
    // A heading that is a link: its text.
    let text = match (text.strip_prefix('['), text.rfind("](")) {
        (Some(inner), Some(end)) => &inner[..end - 1],
        _ => text,
    };
    text.chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings.
fn anchors(text: &str) -> Vec<String> {
    prose(text)
        .into_iter()
        .filter(|line| line.starts_with('#'))
        .map(anchor)
        .collect()
}

/// Every link target in a Markdown text's prose: the `target` of each `[text](target)`.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').expect("a link's target ends");
            targets.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    targets
}

/// The items `tests/tests/public_api.rs` lists.
fn surface() -> Vec<&'static str> {
    let start = PUBLIC_API
        .find("const SURFACE: &str = \"")
        .expect("the list")
        + 23;
    let end = start + PUBLIC_API[start..].find("\";").expect("its end");
    PUBLIC_API[start..end]
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect()
}

/// Why a docs.rs link names nothing the runtime has, if it does not: its path must be the
/// crate's root, a module's page (`guide/streams/index.html`) or an item's
/// (`struct.Upstream.html`) in the public surface, and an anchor on a guide chapter must be
/// one of the chapter's headings.
fn docs_rs_problem(target: &str, surface: &[&str]) -> Option<String> {
    let path = target.strip_prefix(DOCS_RS)?;
    let (path, fragment) = path.split_once('#').unwrap_or((path, ""));
    let mut segments: Vec<&str> = path.split('/').collect();
    let page = segments.pop().unwrap_or_default();
    let module = segments.join("::");
    let named = if page == "index.html" {
        module.is_empty() || surface.contains(&format!("mod {module}").as_str())
    } else {
        let Some((kind, name)) = page
            .strip_suffix(".html")
            .and_then(|page| page.split_once('.'))
        else {
            return Some(format!("{target}: not a module's or an item's page"));
        };
        let item = if module.is_empty() {
            name.to_owned()
        } else {
            format!("{module}::{name}")
        };
        surface.contains(&format!("{kind} {item}").as_str())
    };
    if !named {
        return Some(format!("{target}: the runtime has no such module or item"));
    }
    if fragment.is_empty() {
        return None;
    }
    // An anchor on the guide's pages: a heading of the chapter's (or the guide's first) text.
    let text = match segments.as_slice() {
        ["guide"] => chapter("index"),
        ["guide", name] => chapter(name),
        _ => {
            return Some(format!(
                "{target}: an anchor outside the guide is not checked"
            ));
        }
    };
    (!anchors(&text).iter().any(|found| found == fragment))
        .then(|| format!("{target}: the page has no heading `#{fragment}`"))
}

/// Why a relative link names nothing, if it does not: its file must exist (from the
/// repository's root), and its anchor must be one of that file's headings (or the README's).
fn relative_problem(target: &str) -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
    let text = if file.is_empty() {
        README.to_owned()
    } else {
        match std::fs::read_to_string(root.join(file)) {
            Ok(text) => text,
            Err(_) if root.join(file).is_dir() => return None,
            Err(_) => return Some(format!("{target}: no file {file}")),
        }
    };
    let found = fragment.is_empty() || anchors(&text).iter().any(|anchor| anchor == fragment);
    (!found).then(|| format!("{target}: no heading `#{fragment}` in {file}"))
}

fn link_problems(readme: &str) -> Vec<String> {
    let surface = surface();
    link_targets(readme)
        .iter()
        .filter_map(|target| {
            if target.starts_with(DOCS_RS) {
                docs_rs_problem(target, &surface)
            } else if target.starts_with("https://") || target.starts_with("http://") {
                None
            } else {
                relative_problem(target)
            }
        })
        .collect()
}

#[test]
fn every_link_in_the_readme_names_a_file_a_heading_or_an_item_that_exists() {
    let targets = link_targets(README);
    assert!(
        targets
            .iter()
            .filter(|target| target.starts_with(DOCS_RS))
            .count()
            >= 17,
        "the README links each chapter: {targets:?}"
    );
    let problems = link_problems(README);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_link_to_a_missing_chapter_heading_file_or_item_is_reported() {
    let broken = format!(
        "[a]({DOCS_RS}guide/retries/index.html) [b]({DOCS_RS}guide/streams/index.html#no-such) \
         [c](NOTES.md) [d](BENCHMARKS.md#no-such-table) [e](#no-such-section) \
         [f]({DOCS_RS}struct.Nothing.html) [g]({DOCS_RS}struct.Upstream.html)\n"
    );
    let problems = link_problems(&broken);
    assert_eq!(problems.len(), 6, "{problems:#?}");
}

#[test]
fn every_guide_chapter_is_a_public_module_with_its_text() {
    let surface = surface();
    let chapters: Vec<&str> = surface
        .iter()
        .filter_map(|item| item.strip_prefix("mod guide::"))
        .collect();
    assert!(chapters.len() >= 17, "{chapters:?}");
    for name in chapters {
        assert!(
            chapter(name).starts_with("# "),
            "{name}.md opens with its title"
        );
    }
}

/// Every ```rust block in the guide is a doctest `cargo test --doc` compiles, but one: the
/// layers chapter's async-openai example, which needs a crate the runtime does not depend on,
/// is `ignore`d there and built by `tests/tests/install.rs` as the README's Install block
/// (checked above to be the same text).
#[test]
fn every_rust_example_in_the_guide_is_compiled_but_the_one_install_builds() {
    let surface = surface();
    let mut ignored = Vec::new();
    for name in surface
        .iter()
        .filter_map(|item| item.strip_prefix("mod guide::"))
    {
        for line in chapter(name).lines() {
            let tags = line.strip_prefix("```rust").unwrap_or_default();
            if tags
                .split(',')
                .any(|tag| tag == "ignore" || tag == "compile_fail")
            {
                ignored.push(name.to_owned());
            }
        }
    }
    assert_eq!(ignored, ["layers"], "a guide example is not compiled");
}
