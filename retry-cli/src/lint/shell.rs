//! Shell: a `for`, `while` or `until` loop that retries and runs `sleep` with its own number.
//!
//! Parsed with brush-parser, the parser of the brush shell: a maintained, bash-compatible
//! parser written in Rust that gives every word its line and column, so findings point at the
//! `sleep` as written. (The other Rust shell parsers are unmaintained or POSIX-only, and a
//! regex cannot tell a loop's body from a string that mentions one.)
//!
//! A loop retries when it decides on an outcome: an `until` loop, a `while` loop whose
//! condition is a command (`while ! git push`), or any loop whose body has `break`,
//! `continue`, `return` or `exit` (`git push && break`). `while true; do flush; sleep 60;
//! done` waits whatever happens: a ticker, not a retry.
//!
//! A `sleep` is the shared ladder's, and passes, when every argument comes from `backoff
//! delay`: directly (`sleep "$(backoff delay --attempt "$attempt")"`) or through a variable
//! assigned from it in the loop (`d=$(backoff delay ...); sleep "$d"`). `backoff sleep` and
//! `backoff run` are not `sleep` at all. Loops inside `$(...)` are not looked into.

use std::collections::HashSet;

use brush_parser::ast::{self, Command, CompoundCommand, CompoundList, SimpleCommand};
use brush_parser::{ParseError, ParserOptions, SourcePosition};

use super::{FileReport, Finding, Rule, Skipped, shorten};

/// Where a script's positions are in the file: the same place for a script, the YAML lines
/// and columns for a workflow's `run:` body.
pub(crate) trait Positions {
    /// The file's line and column (from 1) of the script's `line` and `column` (from 1).
    fn place(&self, line: usize, column: usize) -> (usize, usize);
}

/// A script that is the whole file.
pub(crate) struct Identity;

impl Positions for Identity {
    fn place(&self, line: usize, column: usize) -> (usize, usize) {
        (line, column)
    }
}

/// Check one script, reporting at the file positions `positions` gives.
pub(crate) fn check(script: &str, positions: &dyn Positions) -> FileReport {
    if let Some((line, tag)) = unsafe_here_tag(script) {
        let (line, column) = positions.place(line, 1);
        let reason = match tag {
            HereTag::Substituted => {
                "a here-document's end word holds a command substitution (`<<$(`), which the \
                 shell parser cannot read safely (some run it out of memory); write the end \
                 word plainly, or list the file in .backoff-lint-ignore"
            }
            HereTag::Missing => {
                "a here-document (`<<`) has no end word, which the shell parser cannot read \
                 safely (inside `$(`, it runs out of memory); give it one, or list the file in \
                 .backoff-lint-ignore"
            }
        };
        return FileReport {
            findings: Vec::new(),
            skipped: vec![Skipped {
                line,
                column,
                reason: reason.to_owned(),
            }],
        };
    }
    let mut parser = brush_parser::Parser::new(script.as_bytes(), &ParserOptions::default());
    let program = match parser.parse_program() {
        Ok(program) => program,
        Err(error) => return unparsable(&error, script, positions),
    };
    let mut findings = Vec::new();
    for list in &program.complete_commands {
        for node in nodes(list, Depth::ThisLoop) {
            if let Node::Loop(found) = node {
                judge(&found, positions, &mut findings);
            }
        }
    }
    FileReport {
        findings,
        skipped: Vec::new(),
    }
}

/// Why a here-document's end word makes a file unsafe to parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HereTag {
    /// It holds a command substitution (`$(` or a backtick).
    Substituted,
    /// There is none: an operator, a line end or the file's end follows the `<<`.
    Missing,
}

/// The line of the first here-document whose end word holds a command substitution (`$(` or
/// a backtick), or that has no end word, if any. brush-parser 0.4's tokenizer allocates
/// without bound on some of them (`cat <<$(  #` asks for gigabytes, and so do `$(<<  |` and
/// `$(cat <<  ` at the end of a file, which the linter's fuzz test drew), and no script needs
/// either (a shell refuses both), so such a file is reported, never parsed. A here-string
/// (`<<<`) is not a here-document.
fn unsafe_here_tag(script: &str) -> Option<(usize, HereTag)> {
    let mut rest = script;
    while let Some(at) = rest.find("<<") {
        let after = &rest[at + 2..];
        if let Some(string) = after.strip_prefix('<') {
            rest = string;
            continue;
        }
        let tag = after
            .trim_start_matches('-')
            .trim_start_matches([' ', '\t']);
        let word = tag
            .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|'))
            .next()
            .unwrap_or_default();
        let unsafe_tag = if word.contains("$(") || word.contains('`') {
            Some(HereTag::Substituted)
        } else if word.is_empty() {
            Some(HereTag::Missing)
        } else {
            None
        };
        if let Some(unsafe_tag) = unsafe_tag {
            let line = script.len() - after.len();
            return Some((script[..line].matches('\n').count() + 1, unsafe_tag));
        }
        rest = after;
    }
    None
}

/// The report for a script the parser rejects, at the place it stopped.
fn unparsable(error: &ParseError, script: &str, positions: &dyn Positions) -> FileReport {
    let (line, column) = match error {
        ParseError::ParsingNear(position) => (position.line, position.column),
        ParseError::Tokenizing {
            position: Some(position),
            ..
        } => (position.line, position.column),
        // The end of the input: its last line.
        _ => (script.lines().count().max(1), 1),
    };
    let (line, column) = positions.place(line, column);
    FileReport {
        findings: Vec::new(),
        skipped: vec![Skipped {
            line,
            column,
            reason: format!(
                "cannot parse as shell: {error}; it was skipped: fix its syntax, or list it in \
                 .backoff-lint-ignore"
            ),
        }],
    }
}

/// What kind of loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `for` and `for ((...))`.
    For,
    /// `while`.
    While,
    /// `until`.
    Until,
}

/// One loop of the script.
struct Loop<'a> {
    kind: Kind,
    /// Where its keyword is.
    start: &'a SourcePosition,
    /// The condition of a `while` or `until`.
    condition: Option<&'a CompoundList>,
    body: &'a CompoundList,
}

/// A command of interest met in a walk.
enum Node<'a> {
    /// A simple command: `sleep 2`, `d=$(backoff delay)`, `break`.
    Simple(&'a SimpleCommand),
    /// A loop.
    Loop(Loop<'a>),
}

/// How deep a walk goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    /// Stop at nested loops (yield them, not their bodies): what one loop runs itself.
    ThisLoop,
    /// Into nested loops too: everything a loop's rounds may run.
    Everything,
}

/// Report the loop's own sleeps if it retries, then judge the loops nested in it.
fn judge(found: &Loop<'_>, positions: &dyn Positions, findings: &mut Vec<Finding>) {
    let everything = nodes(found.body, Depth::Everything);
    let retries = decides(found, &everything);
    let delays = delay_variables(&everything);
    let (loop_line, _) = positions.place(found.start.line, found.start.column);
    for node in nodes(found.body, Depth::ThisLoop) {
        match node {
            Node::Simple(command) if retries => {
                if let Some(finding) = own_wait(command, &delays, loop_line, positions) {
                    findings.push(finding);
                }
            }
            Node::Simple(_) => {}
            Node::Loop(inner) => judge(&inner, positions, findings),
        }
    }
}

/// Whether the loop leaves or repeats on an outcome.
fn decides(found: &Loop<'_>, body: &[Node<'_>]) -> bool {
    let conditional = match (found.kind, found.condition) {
        (Kind::Until, _) => true,
        (Kind::While, Some(condition)) => !always_true(condition),
        _ => false,
    };
    conditional
        || body.iter().any(|node| {
            matches!(node, Node::Simple(command)
                if matches!(name(command), Some("break" | "continue" | "return" | "exit")))
        })
}

/// Whether a `while` condition is `true` or `:`, so the loop runs until something inside it
/// leaves.
fn always_true(condition: &CompoundList) -> bool {
    let commands = nodes(condition, Depth::ThisLoop);
    matches!(commands.as_slice(), [Node::Simple(command)]
        if matches!(name(command), Some("true" | ":")) && arguments(command).is_empty())
}

/// The finding for `command` if it is a `sleep` whose number is not `backoff delay`'s.
fn own_wait(
    command: &SimpleCommand,
    delays: &HashSet<String>,
    loop_line: usize,
    positions: &dyn Positions,
) -> Option<Finding> {
    let program = command.word_or_name.as_ref()?;
    if program.value != "sleep" && !program.value.ends_with("/sleep") {
        return None;
    }
    let arguments = arguments(command);
    let shared = !arguments.is_empty()
        && arguments
            .iter()
            .all(|word| from_backoff_delay(word) || names_a_delay(word, delays));
    if shared {
        return None;
    }
    let start = program.loc.as_ref().map(|loc| &*loc.start);
    let (line, column) = start.map_or((loop_line, 1), |start| {
        positions.place(start.line, start.column)
    });
    let mut wait = program.value.clone();
    for word in &arguments {
        wait.push(' ');
        wait.push_str(word);
    }
    Some(Finding {
        line,
        column,
        loop_line,
        wait: shorten(&wait),
        rule: Rule::OwnWait,
    })
}

/// Whether a word's value is computed by `backoff delay`.
fn from_backoff_delay(word: &str) -> bool {
    word.contains("$(backoff delay") || word.contains("`backoff delay")
}

/// Whether a word is just `$name`, `${name}` or either quoted, for a `name` in `delays`.
fn names_a_delay(word: &str, delays: &HashSet<String>) -> bool {
    let unquoted = word
        .strip_prefix('"')
        .and_then(|word| word.strip_suffix('"'))
        .unwrap_or(word);
    let Some(reference) = unquoted.strip_prefix('$') else {
        return false;
    };
    let name = reference
        .strip_prefix('{')
        .and_then(|name| name.strip_suffix('}'))
        .unwrap_or(reference);
    delays.contains(name)
}

/// The variables assigned from `backoff delay` in a loop: `d=$(backoff delay ...)` alone or
/// before a command, and `local d=$(...)` (or `declare`, `export`, `readonly`, `typeset`).
fn delay_variables(body: &[Node<'_>]) -> HashSet<String> {
    let mut delays = HashSet::new();
    for node in body {
        let Node::Simple(command) = node else {
            continue;
        };
        let items = command.prefix.iter().flat_map(|prefix| &prefix.0);
        let items = items.chain(command.suffix.iter().flat_map(|suffix| &suffix.0));
        for item in items {
            let assignment = match item {
                ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word)
                | ast::CommandPrefixOrSuffixItem::Word(word) => word.value.split_once('='),
                _ => None,
            };
            if let Some((name, value)) = assignment
                && is_name(name)
                && from_backoff_delay(value)
            {
                delays.insert(name.to_owned());
            }
        }
    }
    delays
}

/// Whether `name` is a shell variable name.
fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|rest| rest.is_ascii_alphanumeric() || rest == '_')
}

/// The command's name, when it has one.
fn name(command: &SimpleCommand) -> Option<&str> {
    command
        .word_or_name
        .as_ref()
        .map(|word| word.value.as_str())
}

/// The command's argument words, as written.
fn arguments(command: &SimpleCommand) -> Vec<&str> {
    let items = command.suffix.iter().flat_map(|suffix| &suffix.0);
    items
        .filter_map(|item| match item {
            ast::CommandPrefixOrSuffixItem::Word(word) => Some(word.value.as_str()),
            _ => None,
        })
        .collect()
}

/// The simple commands and loops of `list`, in order, to `depth`.
fn nodes(list: &CompoundList, depth: Depth) -> Vec<Node<'_>> {
    let mut found = Vec::new();
    push_list(list, depth, &mut found);
    found
}

fn push_list<'a>(list: &'a CompoundList, depth: Depth, found: &mut Vec<Node<'a>>) {
    for item in &list.0 {
        let and_or = &item.0;
        let pipelines =
            std::iter::once(&and_or.first).chain(and_or.additional.iter().map(|next| match next {
                ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline) => pipeline,
            }));
        for pipeline in pipelines {
            for command in &pipeline.seq {
                push_command(command, depth, found);
            }
        }
    }
}

fn push_command<'a>(command: &'a Command, depth: Depth, found: &mut Vec<Node<'a>>) {
    match command {
        Command::Simple(simple) => found.push(Node::Simple(simple)),
        Command::Compound(compound, _) => push_compound(compound, depth, found),
        Command::Function(function) => push_compound(&function.body.0, depth, found),
        Command::ExtendedTest(..) => {}
    }
}

fn push_compound<'a>(compound: &'a CompoundCommand, depth: Depth, found: &mut Vec<Node<'a>>) {
    let found_loop = match compound {
        CompoundCommand::ForClause(clause) => Some(Loop {
            kind: Kind::For,
            start: &clause.loc.start,
            condition: None,
            body: &clause.body.list,
        }),
        CompoundCommand::ArithmeticForClause(clause) => Some(Loop {
            kind: Kind::For,
            start: &clause.loc.start,
            condition: None,
            body: &clause.body.list,
        }),
        CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
            let kind = match compound {
                CompoundCommand::WhileClause(_) => Kind::While,
                _ => Kind::Until,
            };
            Some(Loop {
                kind,
                start: &clause.2.start,
                condition: Some(&clause.0),
                body: &clause.1.list,
            })
        }
        _ => None,
    };
    if let Some(found_loop) = found_loop {
        if depth == Depth::Everything {
            push_list(found_loop.body, depth, found);
        }
        found.push(Node::Loop(found_loop));
        return;
    }
    match compound {
        CompoundCommand::BraceGroup(group) => push_list(&group.list, depth, found),
        CompoundCommand::Subshell(subshell) => push_list(&subshell.list, depth, found),
        CompoundCommand::CaseClause(case) => {
            for item in &case.cases {
                if let Some(list) = &item.cmd {
                    push_list(list, depth, found);
                }
            }
        }
        CompoundCommand::IfClause(clause) => {
            push_list(&clause.condition, depth, found);
            push_list(&clause.then, depth, found);
            for other in clause.elses.iter().flatten() {
                if let Some(condition) = &other.condition {
                    push_list(condition, depth, found);
                }
                push_list(&other.body, depth, found);
            }
        }
        CompoundCommand::Coprocess(coprocess) => push_command(&coprocess.body, depth, found),
        _ => {}
    }
}
