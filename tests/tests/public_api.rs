//! The public surface, named item by item, each by its path: [`SURFACE`] is checked against
//! what `retry-runtime` really exports with every feature on (rustdoc's JSON of the crate), so
//! the list cannot drift from the crate. (Issues 14 and 31.)
//!
//! An item added, moved, renamed or removed fails here, naming it, until the list says so.
//! Branches that change the surface at the same time each edit their lines; after merging,
//! regenerate the list with `PUBLIC_API=overwrite cargo test -p retry-tests --test public_api`
//! and read the diff.
//!
//! rustdoc's JSON is unstable: it is built on stable with `RUSTC_BOOTSTRAP=1`, in a target
//! directory of its own (`RUSTC_BOOTSTRAP` rebuilds everything, and the main one stays
//! unlocked while this test runs), and read through the few fields whose shape its
//! `format_version` (a number at the top) is known to have.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Every public item at module level, one a line: its kind and its path below the crate root.
/// Hidden items (`#[doc(hidden)]`, such as `__private`) are not public API and are not named.
const SURFACE: &str = "
struct AcrossUpstreams
enum Admission
struct Answered
type BoxSleep
struct Canceller
enum Class
derive Classify
trait Classify
struct ClassSet
trait Clock
enum Deadline
const DEFAULT_HOLD_BYTES
const DEFAULT_HOLD_ITEMS
const DEFAULT_RESUME_SILENCE
struct Draw
enum DurationError
struct EndedEarly
enum Ending
mod fleet
const fleet::DEFAULT_BACKSTOP
const fleet::DEFAULT_TIMEOUT
struct fleet::Fleet
struct fleet::FleetBudget
struct fleet::FleetConfig
enum fleet::FleetError
struct fleet::FleetMemory
struct GaveUp
mod grpc
fn grpc::classify_code
fn grpc::classify_status
fn grpc::code_name
fn grpc::parse_code
fn grpc::parse_pushback
const grpc::PUSHBACK
enum grpc::Pushback
mod guide
mod guide::attribute
mod guide::cli
mod guide::explicit
mod guide::fallback
mod guide::fleets
mod guide::google_grpc
mod guide::http
mod guide::layers
mod guide::lint
mod guide::pacing
mod guide::policies
mod guide::quota
mod guide::resume
mod guide::streams
mod guide::telemetry
mod guide::testing
mod guide::turns
mod guide::upstreams
mod http
struct http::Across
type http::AcrossChoice
struct http::AsTransport
enum http::CallError
fn http::classify_response
fn http::classify_status
trait http::ClassifyError
enum http::HintSource
struct http::HttpError
fn http::is_jsonrpc_response
struct http::ModelEvents
fn http::parse_retry_after
fn http::rate_limits
trait http::Reply
struct http::ResendCount
trait http::ResponseExt
fn http::retry_after
enum http::Rule
struct http::StreamError
fn http::tokens_of
type http::UpstreamChoice
trait http::UpstreamFor
trait ItemRules
enum Jitter
mod ladder
fn ladder::cut_by_cancel
fn ladder::decide
enum ladder::Decided
struct ladder::Decision
fn ladder::ends_before
struct ladder::Failure
fn ladder::hinted
fn ladder::hold
fn ladder::hold_allowance
struct ladder::HoldAsked
fn ladder::ideal_wait
fn ladder::jittered
fn ladder::max_wait
fn ladder::over_limit
struct ladder::Pending
enum ladder::Step
enum ladder::Why
fn ladder::worst_case_wait
fn ladder::worst_case_wait_with_hints
enum LeftBecause
mod meter
const meter::ATTEMPT_CLASSES
const meter::ATTEMPTS
const meter::CALLS
const meter::FLEET_STORE
const meter::GIVE_UPS
const meter::OUTCOMES
const meter::QUOTA_REFUSALS
const meter::REASONS
const meter::STREAM_COMMITS
const meter::STREAM_RESTARTS
const meter::STREAM_RESUMES
const meter::UPSTREAM_GATE
const meter::UPSTREAM_MOVES
const meter::UPSTREAM_PACE_RATE
const meter::UPSTREAM_PACED
const meter::UPSTREAM_PAUSES
const meter::UPSTREAM_PROBES
const meter::UPSTREAM_WAIT_SECONDS
const meter::UPSTREAM_WAITS
const meter::WAIT_SECONDS
mod notice
enum notice::Action
fn notice::clear_process_hook
type notice::Hook
enum notice::Notice
enum notice::Reached
struct notice::RetryEvent
fn notice::set_process_hook
enum notice::TurnEnd
struct notice::TurnEnded
struct NoUpstream
struct OneUpstream
trait OpenAttempt
struct OpenOnUpstream
fn parse_duration
enum PausedBy
trait Placement
struct Policy
enum PolicyError
struct Quota
struct RateLeft
enum RateLimit
struct RateSaid
mod redact
fn redact::clear_rule
struct redact::Redacted
fn redact::set_rule
mod reqwest_middleware
struct reqwest_middleware::RetryMiddleware
trait Resumable
struct ResumeFrom
attr retry
struct Retry
trait RetryAfter
struct RetryStream
mod sse
trait sse::AsEvent
fn sse::decode
enum sse::DecodeError
const sse::DEFAULT_MAX_EVENT_SIZE
struct sse::Event
struct sse::Events
fn sse::is_content
enum StopReason
struct StreamRules
mod testing
struct testing::Act
enum testing::ActError
struct testing::Asked
fn testing::collect
struct testing::FaultLayer
struct testing::FaultMiddleware
struct testing::FaultServer
struct testing::FaultService
struct testing::Recorded
fn testing::scope
fn testing::scope_with_draw
struct testing::Script
struct testing::ScriptedEvent
trait testing::ScriptedRequest
trait testing::ScriptedResponse
fn testing::stream_of
struct testing::StreamOf
struct TimedOut
struct TimedRetry
enum TimeoutBound
struct TokioClock
struct TokioSleep
mod tower
struct tower::ByClone
trait tower::CloneRequest
struct tower::HttpRequests
struct tower::ResponseFuture
struct tower::RetryLayer
struct tower::RetryService
mod turn
struct Turn
struct turn::Canceller
fn turn::current
struct turn::CutWait
struct turn::GaveUpRecord
struct turn::InFlight
struct turn::Op
struct turn::OpLiteral
trait turn::OpName
fn turn::remaining
struct turn::Turn
struct turn::TurnFuture
struct turn::TurnHandle
enum turn::TurnOutcome
struct turn::TurnReport
struct TurnReport
struct Upstream
enum UpstreamEffect
struct UpstreamLeft
struct UpstreamPaused
struct UpstreamRef
struct UpstreamStatus
struct Upstreams
";

#[test]
fn the_list_names_every_public_item_and_nothing_else() {
    let exported = exported();
    let listed: BTreeSet<String> = SURFACE
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    if std::env::var_os("PUBLIC_API").is_some_and(|value| value == "overwrite") {
        overwrite(&exported);
        return;
    }
    let missing: Vec<&String> = exported.difference(&listed).collect();
    let extra: Vec<&String> = listed.difference(&exported).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the public surface changed:\n\
         missing from the list (public, not listed): {missing:#?}\n\
         extra in the list (listed, not public): {extra:#?}\n\
         edit `SURFACE` in {}, or rerun with PUBLIC_API=overwrite and read the diff",
        file!(),
    );
}

/// The crate's public items, as `kind path` lines, from rustdoc's JSON.
fn exported() -> BTreeSet<String> {
    let json = rustdoc_json();
    let version = &json["format_version"];
    let crate_json = CrateJson::new(&json).unwrap_or_else(|problem| {
        panic!("rustdoc JSON, format_version {version}: {problem}; update this test's reader")
    });
    let mut items = BTreeSet::new();
    crate_json
        .walk(crate_json.root, "", &mut items, 0)
        .unwrap_or_else(|problem| {
            panic!("rustdoc JSON, format_version {version}: {problem}; update this test's reader")
        });
    items
}

/// Builds `retry-runtime`'s rustdoc JSON with every feature on, and reads it.
fn rustdoc_json() -> Value {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let target = own_target_dir();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace)
        .env("RUSTC_BOOTSTRAP", "1")
        .args([
            "rustdoc",
            "-q",
            "-p",
            "retry-runtime",
            "--all-features",
            "--target-dir",
        ])
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo rustdoc failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = target.join("doc").join("retry_runtime.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
    serde_json::from_str(&text).expect("rustdoc writes JSON")
}

/// `public-api` beside this test's own build (`<target>/debug/deps/public_api-*`), so a
/// `CARGO_TARGET_DIR` is followed and the build's own directory is never locked twice.
fn own_target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("the test runs from <target>/<profile>/deps");
    target.join("public-api")
}

/// The fields of rustdoc's JSON this test reads: the root module's id, and the items by id.
struct CrateJson<'a> {
    root: &'a Value,
    index: &'a serde_json::Map<String, Value>,
    paths: &'a serde_json::Map<String, Value>,
}

impl<'a> CrateJson<'a> {
    fn new(json: &'a Value) -> Result<Self, String> {
        let field = |name: &str| json.get(name).ok_or(format!("no `{name}` at the top"));
        let map = |name: &str| {
            field(name)?
                .as_object()
                .ok_or(format!("`{name}` is not an object"))
        };
        if !json["format_version"].is_u64() {
            return Err("`format_version` is not a number".to_owned());
        }
        Ok(Self {
            root: field("root")?,
            index: map("index")?,
            paths: map("paths")?,
        })
    }

    /// Adds the public items of the module `id`, whose path is `prefix`, to `items`.
    fn walk(
        &self,
        id: &Value,
        prefix: &str,
        items: &mut BTreeSet<String>,
        depth: usize,
    ) -> Result<(), String> {
        // A glob re-export of a parent would loop; no real module is this deep.
        if depth > 16 {
            return Err(format!("modules nested past 16 at `{prefix}`"));
        }
        let module = self.item(id)?;
        let children = module["inner"]["module"]["items"]
            .as_array()
            .ok_or(format!("module `{prefix}` has no `inner.module.items`"))?;
        for child in children {
            let child = self.item(child)?;
            let (name, target) = match child["inner"].get("use") {
                Some(reexport) if reexport["is_glob"] == true => {
                    self.walk(&reexport["id"], prefix, items, depth + 1)?;
                    continue;
                }
                Some(reexport) => (reexport["name"].as_str(), &reexport["id"]),
                None => (child["name"].as_str(), &child["id"]),
            };
            let name = name.ok_or(format!("an item of `{prefix}` has no name"))?;
            let path = format!("{prefix}{name}");
            let kind = self.kind(target)?;
            items.insert(format!("{kind} {path}"));
            if kind == "mod" {
                self.walk(target, &format!("{path}::"), items, depth + 1)?;
            }
        }
        Ok(())
    }

    fn item(&self, id: &Value) -> Result<&'a Value, String> {
        self.index
            .get(&key(id))
            .ok_or(format!("no item {id} in `index`"))
    }

    /// The kind of the item `id`, as Rust writes it; an item of another crate (the macros) is
    /// known only through `paths`.
    fn kind(&self, id: &Value) -> Result<&'static str, String> {
        let kind = match self.index.get(&key(id)) {
            Some(item) => match item["inner"]
                .as_object()
                .and_then(|inner| inner.keys().next())
            {
                Some(kind) if kind == "proc_macro" => {
                    match item["inner"]["proc_macro"]["kind"].as_str() {
                        Some("attr") => "proc_attribute",
                        Some("derive") => "proc_derive",
                        _ => "macro",
                    }
                }
                Some(kind) => kind.as_str(),
                None => return Err(format!("item {id} has no `inner` kind")),
            },
            None => self
                .paths
                .get(&key(id))
                .and_then(|path| path["kind"].as_str())
                .ok_or(format!("re-export of {id}, in neither `index` nor `paths`"))?,
        };
        Ok(match kind {
            "module" => "mod",
            "function" => "fn",
            "constant" => "const",
            "static" => "static",
            "struct" => "struct",
            "enum" => "enum",
            "union" => "union",
            "trait" => "trait",
            "type_alias" => "type",
            "macro" => "macro",
            "proc_attribute" => "attr",
            "proc_derive" => "derive",
            other => return Err(format!("item {id} of unknown kind `{other}`")),
        })
    }
}

/// An id as `index` and `paths` key it: a number (a string in older formats) written out.
fn key(id: &Value) -> String {
    match id {
        Value::String(id) => id.clone(),
        id => id.to_string(),
    }
}

/// Writes `exported` into `SURFACE` in this file, for the lead to review as a diff.
fn overwrite(exported: &BTreeSet<String>) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/public_api.rs");
    let source = std::fs::read_to_string(&file).unwrap();
    let start =
        source.find("const SURFACE: &str = \"\n").unwrap() + "const SURFACE: &str = \"\n".len();
    let end = start + source[start..].find("\";\n").unwrap();
    let mut lines: Vec<&String> = exported.iter().collect();
    lines.sort_by_key(|line| sort_key(line));
    let list: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(
        &file,
        format!("{}{list}{}", &source[..start], &source[end..]),
    )
    .unwrap();
}

/// Items in path order, case aside, so a module's items follow it.
fn sort_key(line: &str) -> (String, String) {
    let (kind, path) = line.split_once(' ').unwrap_or(("", line));
    (path.to_lowercase(), kind.to_owned())
}
