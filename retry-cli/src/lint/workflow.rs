//! GitHub Actions workflows: every `run:` body is a shell script, checked by [`super::shell`].
//!
//! The YAML is read with saphyr-parser, the maintained successor of yaml-rust, whose events
//! carry the position of each scalar. A finding's line and column are the YAML file's: exact
//! for a literal block (`run: |`), whose lines are the script's lines indented; the scalar's
//! start for a folded (`>`), quoted or plain one, whose line breaks the parser has rewritten.
//!
//! `${{ ... }}` expressions are not shell: each is replaced by a placeholder of the same
//! length before the script is parsed, so every column after it holds.

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, ScanError};

use super::shell::{self, Positions};
use super::{FileReport, Skipped};

/// One `run:` body and where it is.
struct RunBody {
    script: String,
    style: ScalarStyle,
    start: Marker,
}

/// Check one workflow file's text.
pub(crate) fn check(text: &str) -> FileReport {
    let bodies = match run_bodies(text) {
        Ok(bodies) => bodies,
        Err(error) => return unparsable(&error),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut report = FileReport::default();
    for body in bodies {
        let (script, expressions) = without_expressions(&body.script);
        let positions = place_of(&body, &lines);
        let mut found = shell::check(&script, &positions);
        for finding in &mut found.findings {
            finding.wait = with_expressions(&finding.wait, &expressions);
        }
        report.findings.append(&mut found.findings);
        report.skipped.append(&mut found.skipped);
    }
    report
}

/// The report for YAML the parser rejects, at the place it stopped.
fn unparsable(error: &ScanError) -> FileReport {
    let marker = error.marker();
    FileReport {
        findings: Vec::new(),
        skipped: vec![Skipped {
            line: marker.line(),
            column: marker.col() + 1,
            reason: format!(
                "cannot parse as YAML: {}; it was skipped: fix its syntax, or list it in \
                 .backoff-lint-ignore",
                error.info()
            ),
        }],
    }
}

/// Where a container of the YAML is, for telling a mapping's keys from its values.
enum Frame {
    /// A mapping: whether a key comes next, and whether the last key was `run`.
    Mapping { key_next: bool, run_key: bool },
    /// A sequence, or anything else whose items are not keyed.
    Sequence,
}

/// Every scalar value of a `run` key, anywhere in the file (a step's `run:` is the only
/// scalar one GitHub Actions has; `defaults.run` is a mapping).
fn run_bodies(text: &str) -> Result<Vec<RunBody>, ScanError> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut bodies = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event?;
        match event {
            Event::Scalar(value, style, ..) => {
                if let Some(Frame::Mapping { key_next, run_key }) = stack.last_mut() {
                    if *key_next {
                        *run_key = value == "run";
                    } else if *run_key {
                        bodies.push(RunBody {
                            script: value.into_owned(),
                            style,
                            start: span.start,
                        });
                    }
                    *key_next = !*key_next;
                }
            }
            Event::Alias(_) => take_turn(&mut stack),
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                // A container is a whole key or value of the mapping it is in.
                take_turn(&mut stack);
                stack.push(match event {
                    Event::MappingStart(..) => Frame::Mapping {
                        key_next: true,
                        run_key: false,
                    },
                    _ => Frame::Sequence,
                });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    Ok(bodies)
}

/// A node that is not a `run` body took its turn as a key or a value.
fn take_turn(stack: &mut [Frame]) {
    if let Some(Frame::Mapping { key_next, run_key }) = stack.last_mut() {
        if *key_next {
            *run_key = false;
        }
        *key_next = !*key_next;
    }
}

/// The script with each `${{ ... }}` replaced by a placeholder of as many characters, and the
/// expressions with their placeholders.
fn without_expressions(script: &str) -> (String, Vec<(String, String)>) {
    let mut out = String::with_capacity(script.len());
    let mut expressions = Vec::new();
    let mut rest = script;
    while let Some(open) = rest.find("${{") {
        let Some(close) = rest[open..].find("}}") else {
            break;
        };
        let end = open + close + 2;
        out.push_str(&rest[..open]);
        let expression = &rest[open..end];
        let placeholder = placeholder(expressions.len(), expression.chars().count());
        out.push_str(&placeholder);
        expressions.push((placeholder, expression.to_owned()));
        rest = &rest[end..];
    }
    out.push_str(rest);
    (out, expressions)
}

/// A shell word of `length` characters (at least 5, as `${{}}` is) that names expression
/// `index`: `E7___`. No placeholder is the start of another, so each is put back in its place.
fn placeholder(index: usize, length: usize) -> String {
    let mut word = format!("E{index}_");
    if word.len() > length {
        // More expressions than short placeholders can name: the quote keeps the placeholder.
        word.clear();
    }
    while word.len() < length {
        word.push('_');
    }
    word
}

/// The waiting words with the workflow's expressions put back, so a finding quotes the file.
fn with_expressions(wait: &str, expressions: &[(String, String)]) -> String {
    let mut restored = wait.to_owned();
    for (placeholder, expression) in expressions {
        if placeholder.starts_with('E') {
            restored = restored.replace(placeholder.as_str(), expression);
        }
    }
    restored
}

/// How a body's script positions map to the file's.
enum Place {
    /// A literal block: script line 1 is file line `first_line`, indented by `indent`.
    Literal { first_line: usize, indent: usize },
    /// Anything else: every position is the scalar's start.
    Start { line: usize, column: usize },
}

impl Positions for Place {
    fn place(&self, line: usize, column: usize) -> (usize, usize) {
        match *self {
            Place::Literal { first_line, indent } => (first_line + line - 1, column + indent),
            Place::Start { line, column } => (line, column),
        }
    }
}

/// Where a body's script is in the file's `lines`.
fn place_of(body: &RunBody, lines: &[&str]) -> Place {
    let start = Place::Start {
        line: body.start.line(),
        column: body.start.col() + 1,
    };
    if body.style != ScalarStyle::Literal {
        return start;
    }
    // The block's content starts on the line after its `|` header. Its indentation is that of
    // its first line that is not blank, which the parser removed from every line.
    let header = literal_header_line(body, lines);
    let first_line = header + 1;
    let indent = lines
        .iter()
        .skip(header)
        .find(|line| !line.trim().is_empty())
        .map_or(0, |line| line.chars().take_while(|c| *c == ' ').count());
    Place::Literal { first_line, indent }
}

/// The line (from 1) holding a literal block's `|`: the scalar's start line when the `|` is at
/// or after its column there, else the nearest line above that has one.
fn literal_header_line(body: &RunBody, lines: &[&str]) -> usize {
    let mut line = body.start.line().min(lines.len()).max(1);
    while line > 1 && !lines.get(line - 1).is_some_and(|text| text.contains('|')) {
        line -= 1;
    }
    line
}
