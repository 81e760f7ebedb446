//! GitHub Actions workflows: every `run:` body is a shell script, checked by [`super::shell`].
//!
//! The YAML is read with saphyr-parser, the maintained successor of yaml-rust, whose events
//! carry the position of each scalar. A finding's line and column are the YAML file's: exact
//! for a literal block (`run: |`), whose lines are the script's lines indented; the scalar's
//! start for a folded (`>`), quoted or plain one, whose line breaks the parser has rewritten.
//!
//! A step with a `shell:` other than sh or bash (`pwsh`, `python`) is not shell, and is not
//! read; a step without one runs bash, GitHub's default.
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

/// The key a mapping's next value belongs to, as far as the lint cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// `run`: a step's script.
    Run,
    /// `shell`: the step's shell, which may not be sh or bash.
    Shell,
    /// Any other key.
    Other,
}

/// A mapping being read: a step, or any other mapping of the workflow.
struct Mapping {
    /// Whether a key comes next (else its value).
    key_next: bool,
    /// The key of the value that comes next.
    key: Key,
    /// Its `run:` body, if it has one.
    run: Option<RunBody>,
    /// Its `shell:`, if it has one.
    shell: Option<String>,
}

impl Mapping {
    const fn new() -> Self {
        Mapping {
            key_next: true,
            key: Key::Other,
            run: None,
            shell: None,
        }
    }

    /// One node took its turn as a key or a value: a scalar (`Some`) or a container or alias.
    fn take_turn(&mut self, scalar: Option<(&str, ScalarStyle, Marker)>) {
        if self.key_next {
            self.key = match scalar {
                Some(("run", ..)) => Key::Run,
                Some(("shell", ..)) => Key::Shell,
                _ => Key::Other,
            };
        } else if let Some((value, style, start)) = scalar {
            match self.key {
                Key::Run => {
                    self.run = Some(RunBody {
                        script: value.to_owned(),
                        style,
                        start,
                    });
                }
                Key::Shell => self.shell = Some(value.to_owned()),
                Key::Other => {}
            }
        }
        self.key_next = !self.key_next;
    }

    /// Its `run:` body, when its shell is sh or bash (GitHub's default for a `run:` step is
    /// bash); a `shell: pwsh` or `shell: python` body is not shell, and not checked.
    fn into_shell_body(self) -> Option<RunBody> {
        let shell = self.shell.as_deref().unwrap_or("bash");
        let program = shell.split_whitespace().next().unwrap_or_default();
        let is_sh = matches!(program.rsplit('/').next(), Some("bash" | "sh"));
        self.run.filter(|_| is_sh)
    }
}

/// Where a container of the YAML is, for telling a mapping's keys from its values.
enum Frame {
    /// A mapping.
    Mapping(Mapping),
    /// A sequence, whose items are not keyed.
    Sequence,
}

/// Every scalar value of a `run` key whose mapping's shell is sh or bash, anywhere in the file
/// (a step's `run:` is the only scalar one GitHub Actions has; `defaults.run` is a mapping).
fn run_bodies(text: &str) -> Result<Vec<RunBody>, ScanError> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut bodies = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event?;
        match event {
            Event::Scalar(value, style, ..) => {
                if let Some(Frame::Mapping(mapping)) = stack.last_mut() {
                    mapping.take_turn(Some((&value, style, span.start)));
                }
            }
            Event::Alias(_) | Event::MappingStart(..) | Event::SequenceStart(..) => {
                // An alias or a container is a whole key or value of the mapping it is in.
                if let Some(Frame::Mapping(mapping)) = stack.last_mut() {
                    mapping.take_turn(None);
                }
                match event {
                    Event::MappingStart(..) => stack.push(Frame::Mapping(Mapping::new())),
                    Event::SequenceStart(..) => stack.push(Frame::Sequence),
                    _ => {}
                }
            }
            Event::MappingEnd | Event::SequenceEnd => {
                if let Some(Frame::Mapping(mapping)) = stack.pop() {
                    bodies.extend(mapping.into_shell_body());
                }
            }
            _ => {}
        }
    }
    // In the order of the file, whatever order the steps' keys came in.
    bodies.sort_by_key(|body| body.start.index());
    Ok(bodies)
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
