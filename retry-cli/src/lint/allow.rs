//! Explicit exceptions: `backoff-lint: allow(<reason>)` in a comment on the line before a loop.
//!
//! Where waiting is the point (the engine's own sleep, a benchmark's hand-written baseline),
//! the exception is written where the loop is, with its reason, so a reviewer reads both. An
//! allow without a reason is itself a finding: an exception nobody explained is the silent
//! copy of the rule the seed warns about.

use std::sync::LazyLock;

use regex::Regex;

use super::{FileReport, Finding, Rule};

/// An allow in a comment (`//` in Rust, `#` in shell and YAML), and its reason if it has one.
/// Only a comment counts, so a string or a doc that mentions the spelling is not an allow.
static ALLOW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?://+|#+)\s*backoff-lint:\s*allow\b(?:\s*\(([^)]*)\))?")
        .expect("the allow pattern is valid")
});

/// One allow comment in a file.
struct Allow {
    /// Its line, from 1.
    line: usize,
    /// Its column, from 1, in characters.
    column: usize,
    /// Whether it says why.
    has_reason: bool,
    /// Its words, without the comment's leader: `backoff-lint: allow()`.
    words: String,
}

/// Drop the findings whose loop an allow with a reason exempts, and add a finding for every
/// allow without one.
pub(crate) fn apply(text: &str, report: &mut FileReport) {
    let allows = allows(text);
    report.findings.retain(|finding| {
        finding.rule != Rule::OwnWait
            || !allows
                .iter()
                .any(|allow| allow.has_reason && allow.line + 1 == finding.loop_line)
    });
    for allow in allows.iter().filter(|allow| !allow.has_reason) {
        report.findings.push(Finding {
            line: allow.line,
            column: allow.column,
            loop_line: allow.line + 1,
            wait: allow.words.clone(),
            rule: Rule::AllowWithoutReason,
        });
    }
    report
        .findings
        .sort_by_key(|finding| (finding.line, finding.column));
}

/// Every allow comment in `text`.
fn allows(text: &str) -> Vec<Allow> {
    // Most files have none; skip the per-line work for them.
    if !text.contains("backoff-lint") {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        for captures in ALLOW.captures_iter(line) {
            let Some(whole) = captures.get(0) else {
                continue;
            };
            let reason = captures.get(1).map_or("", |reason| reason.as_str().trim());
            found.push(Allow {
                line: index + 1,
                column: line[..whole.start()].chars().count() + 1,
                has_reason: !reason.is_empty(),
                words: whole
                    .as_str()
                    .trim_start_matches(['/', '#'])
                    .trim_start()
                    .to_owned(),
            });
        }
    }
    found
}
