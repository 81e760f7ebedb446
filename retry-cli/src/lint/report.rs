//! Checking every file of the walk, and the report: clippy's `path:line:col: message` and a
//! help line, or one JSON object.
//!
//! A finding quotes only the waiting words (`sleep $((attempt * 5))`), never the line they are
//! on: the line may hold a token or a password.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::bounds;
use super::walk::{Entry, Language};
use super::{FileReport, Rule, check_file};
use crate::error::CliError;
use crate::output;

/// Findings were reported: exit 1, as clippy and ripgrep's "found" do.
const FOUND: u8 = 1;
/// Bad input and nothing else to report: exit 2.
const BAD_INPUT: u8 = 2;

/// The fix for a Rust loop.
const RUST_HELP: &str = "retry with `#[retry]` on the function that makes the call, or \
                         `Retry::new(..).run(..)`: one engine computes every wait";
/// The fix for a shell loop.
const SHELL_HELP: &str = "wait with `backoff sleep --attempt \"$attempt\"` (or `sleep \"$(backoff \
                          delay --attempt \"$attempt\")\"`), or retry the command with `backoff \
                          run -- <command>`";
/// The fix for an allow without a reason.
const ALLOW_HELP: &str = "say why this loop waits by itself: `backoff-lint: allow(<reason>)`";

/// What the whole run found.
pub(crate) struct Checked {
    /// Each file checked, with what it holds.
    files: Vec<(PathBuf, Language, FileReport)>,
    /// The paths that could not be read, and why.
    unreadable: Vec<(PathBuf, String)>,
}

impl Checked {
    /// 1 when anything was found, else 2 when anything could not be checked, else 0.
    pub(crate) fn status(&self) -> ExitCode {
        let found = self
            .files
            .iter()
            .any(|(.., report)| !report.findings.is_empty());
        let skipped = !self.unreadable.is_empty()
            || self
                .files
                .iter()
                .any(|(.., report)| !report.skipped.is_empty());
        if found {
            ExitCode::from(FOUND)
        } else if skipped {
            ExitCode::from(BAD_INPUT)
        } else {
            ExitCode::SUCCESS
        }
    }
}

/// Read and check every entry of the walk.
pub(crate) fn check_all(entries: Vec<Entry>) -> Checked {
    let mut checked = Checked {
        files: Vec::new(),
        unreadable: Vec::new(),
    };
    for entry in entries {
        match entry {
            Entry::File(path, language) => match read_bounded(&path) {
                Ok(bytes) => {
                    let report = check_file(language, &bytes);
                    checked.files.push((path, language, report));
                }
                Err(error) => checked.unreadable.push((path, error.to_string())),
            },
            Entry::Unreadable(path, reason) => checked.unreadable.push((path, reason)),
        }
    }
    checked
}

/// The file's bytes, but never more than one past [`bounds::MAX_BYTES`]: enough for
/// [`bounds::admit`] to report a file too large without a huge one filling the memory.
fn read_bounded(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let limit = u64::try_from(bounds::MAX_BYTES).unwrap_or(u64::MAX);
    File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A path as the report prints it: as walked, without a leading `./`.
fn shown(path: &Path) -> String {
    let shown = path.display().to_string();
    match shown.strip_prefix("./") {
        Some(rest) => rest.to_owned(),
        None => shown,
    }
}

/// The help line for a finding.
fn help(language: Language, rule: Rule) -> &'static str {
    match (rule, language) {
        (Rule::AllowWithoutReason, _) => ALLOW_HELP,
        (Rule::OwnWait, Language::Rust) => RUST_HELP,
        (Rule::OwnWait, _) => SHELL_HELP,
    }
}

/// The findings on stdout; what could not be checked, and a count, on stderr.
pub(crate) fn print_text(checked: &Checked) -> Result<(), CliError> {
    let mut out = output::stdout();
    let mut count = 0usize;
    for (path, language, report) in &checked.files {
        let path = shown(path);
        for finding in &report.findings {
            count += 1;
            let message = match finding.rule {
                Rule::OwnWait => "a loop that retries computes its own wait",
                Rule::AllowWithoutReason => "an allow without a reason",
            };
            writeln!(
                out,
                "{path}:{}:{}: {message}: {}",
                finding.line, finding.column, finding.wait
            )?;
            writeln!(out, "  help: {}", help(*language, finding.rule))?;
        }
        for skipped in &report.skipped {
            // A place the parser did not give is left out rather than printed as `0:0`.
            match (skipped.line, skipped.column) {
                (0, _) => output::say(format_args!("{path}: {}", skipped.reason)),
                (line, 0) => output::say(format_args!("{path}:{line}: {}", skipped.reason)),
                (line, column) => {
                    output::say(format_args!("{path}:{line}:{column}: {}", skipped.reason));
                }
            }
        }
    }
    out.flush()?;
    for (path, reason) in &checked.unreadable {
        output::say(format_args!(
            "{}: cannot read it: {reason}; check the path and its permissions",
            shown(path)
        ));
    }
    if count > 0 {
        let files = checked.files.len();
        output::say(format_args!(
            "{count} finding(s) in {files} file(s) checked"
        ));
    }
    Ok(())
}

/// The report as one JSON object (its fields are documented on `--json`).
pub(crate) fn print_json(checked: &Checked) -> Result<(), CliError> {
    let mut findings = Vec::new();
    let mut skipped = Vec::new();
    for (path, language, report) in &checked.files {
        let path = shown(path);
        for finding in &report.findings {
            findings.push(serde_json::json!({
                "path": path,
                "line": finding.line,
                "column": finding.column,
                "language": language.name(),
                "wait": finding.wait,
                "loop_line": finding.loop_line,
                "rule": match finding.rule {
                    Rule::OwnWait => "own-wait",
                    Rule::AllowWithoutReason => "allow-without-reason",
                },
                "help": help(*language, finding.rule),
            }));
        }
        for skip in &report.skipped {
            skipped.push(serde_json::json!({
                "path": path,
                "line": skip.line,
                "column": skip.column,
                "reason": skip.reason,
            }));
        }
    }
    for (path, reason) in &checked.unreadable {
        skipped.push(serde_json::json!({
            "path": shown(path),
            "line": 0,
            "column": 0,
            "reason": format!("cannot read it: {reason}"),
        }));
    }
    let object = serde_json::json!({
        "findings": findings,
        "skipped": skipped,
        "files_checked": checked.files.len(),
    });
    let mut out = output::stdout();
    writeln!(out, "{object}")?;
    out.flush()?;
    Ok(())
}
