//! `backoff lint`: find the retry loops that compute their own wait.
//!
//! A shared retry rule had an implementation and four call sites in bash that no check read: all
//! four slept `$((attempt * 5))`, the thundering herd the rule exists to prevent. This is the
//! check. It pins the property, "a loop that retries does not compute its own wait", not a
//! spelling: a loop that reaches the shared ladder (`#[retry]`, `Retry::new(..).run(..)`,
//! `backoff sleep`, `backoff run`, `sleep "$(backoff delay ..)"`) passes.
//!
//! A retry loop, in every language, is a loop that waits and that leaves or repeats depending
//! on whether an attempt succeeded. A loop that waits every round and never decides (a ticker,
//! a heartbeat) is not one. Each language has its module: [`rust`], [`shell`] and
//! [`workflow`] (the `run:` bodies of GitHub Actions workflows, checked as shell). [`walk`]
//! finds the files, [`allow`] reads the explicit exceptions, [`bounds`] keeps hostile input
//! from crashing the process and [`report`] prints what was found.

mod allow;
mod bounds;
mod report;
mod rust;
mod shell;
mod walk;
mod workflow;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::error::CliError;

pub(crate) use walk::Language;

/// `backoff lint` (its help, on the subcommand in [`crate::cli`], says what it checks).
#[derive(Debug, Args)]
pub(crate) struct Lint {
    /// Files or directories to check.
    #[arg(default_value = ".", value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Print one JSON object instead: `findings`, a list of objects with `path`, `line` and
    /// `column` (from 1, of the wait, in the file as written: a workflow's YAML, not the
    /// script inside it), `language` (`rust`, `shell` or `workflow`), `wait` (the waiting
    /// words only, never the whole line), `loop_line` (the line of the loop that waits), `rule`
    /// (`own-wait`, or `allow-without-reason`) and `help` (the fix); `skipped`, a list of
    /// objects with `path`, `line`, `column` (0 when unknown) and `reason`, for what could not
    /// be checked; and `files_checked`, the number of files read.
    #[arg(long)]
    json: bool,
}

/// One thing the lint reports: a loop that computes its own wait, or an allow without a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// The line of the wait, from 1.
    pub(crate) line: usize,
    /// The column of the wait, from 1, in characters.
    pub(crate) column: usize,
    /// The line of the loop the wait is in.
    pub(crate) loop_line: usize,
    /// The waiting words, e.g. `sleep $((attempt * 5))`.
    pub(crate) wait: String,
    /// Which rule: [`Rule::OwnWait`] or [`Rule::AllowWithoutReason`].
    pub(crate) rule: Rule,
}

/// Which rule a finding breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// A loop that retries computes its own wait.
    OwnWait,
    /// A `backoff-lint: allow()` with no reason in it.
    AllowWithoutReason,
}

/// A file, or a part of one, that could not be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// Where, from 1; 0 when the parser did not say.
    pub(crate) line: usize,
    /// The column, from 1; 0 when the parser did not say.
    pub(crate) column: usize,
    /// What went wrong, and what to do.
    pub(crate) reason: String,
}

/// What checking one file found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FileReport {
    /// Its findings, in the order of the file.
    pub(crate) findings: Vec<Finding>,
    /// What in it could not be checked.
    pub(crate) skipped: Vec<Skipped>,
}

impl Lint {
    /// Check every path, print the report, and say with the status what was found.
    pub(crate) fn check(&self) -> Result<ExitCode, CliError> {
        let files = walk::files(&self.paths);
        // A parser's panic is caught and reported as a skipped file (see `bounds`); the
        // default hook would also print a backtrace notice for it.
        std::panic::set_hook(Box::new(|_| {}));
        // syn and the shell parser recurse; the bounds module runs them on a thread whose
        // stack holds the deepest nesting it lets through.
        let checked = bounds::on_large_stack(move || report::check_all(files))
            .map_err(|message| CliError::BadInput(message.to_owned()))?;
        if self.json {
            report::print_json(&checked)?;
        } else {
            report::print_text(&checked)?;
        }
        Ok(checked.status())
    }
}

/// The longest wait quoted in a finding; the rest is cut, so no long argument is printed.
const MAX_WAIT_CHARS: usize = 80;

/// The waiting words as a finding quotes them: cut to [`MAX_WAIT_CHARS`] characters, with
/// `...` when something was cut.
pub(crate) fn shorten(words: &str) -> String {
    if words.chars().count() <= MAX_WAIT_CHARS {
        return words.to_owned();
    }
    let mut cut: String = words.chars().take(MAX_WAIT_CHARS).collect();
    cut.push_str("...");
    cut
}

/// Check one file's bytes as `language`. Never panics: input too large or too deep to parse
/// safely, and a parser that fails, are reported in `skipped`.
pub(crate) fn check_file(language: Language, bytes: &[u8]) -> FileReport {
    let text = match bounds::admit(language, bytes) {
        Ok(text) => text,
        Err(skipped) => {
            return FileReport {
                findings: Vec::new(),
                skipped: vec![skipped],
            };
        }
    };
    let mut report = bounds::catching(language, || match language {
        Language::Rust => rust::check(text),
        Language::Shell => shell::check(text, &shell::Identity),
        Language::Workflow => workflow::check(text),
    });
    allow::apply(text, &mut report);
    report
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::bounds::{self, MAX_NESTING, MAX_PREFIXES};
    use super::*;

    /// Bytes shaped like each language often enough to reach its parser: its brackets,
    /// operators and keywords, and arbitrary bytes.
    fn source_like() -> impl Strategy<Value = Vec<u8>> {
        let pieces = prop::sample::select(vec![
            "(",
            ")",
            "{",
            "}",
            "[",
            "]",
            "<",
            ">",
            "!",
            "&",
            "|",
            ";",
            ":",
            "\"",
            "'",
            "`",
            "$",
            "$(",
            "${{",
            "}}",
            "#",
            "#!",
            "\n",
            " ",
            "  ",
            "-",
            "=",
            "loop",
            "while",
            "for",
            "in",
            "do",
            "done",
            "until",
            "if",
            "then",
            "fi",
            "case",
            "esac",
            "sleep",
            "break",
            "fn",
            "match",
            "Err",
            "Ok",
            "use",
            "tokio::time::sleep",
            "run: |",
            "steps:",
            "- ",
            "\u{e9}",
            "\u{10ffff}",
        ]);
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..256),
            prop::collection::vec(pieces, 0..64).prop_map(|pieces| pieces.concat().into_bytes()),
        ]
    }

    /// Ten thousand cases from a fixed seed, the same on every run. A random seed once drew a
    /// shell input on which brush-parser allocated past 24 GB (`$(<<  `, now refused before
    /// parsing), and the kernel killed the whole test binary with no case to show; a sweep of
    /// other seeds (`LINT_FUZZ_SEED=<n>`, under `ulimit -v` so that such a case aborts
    /// quickly) is how it was found, and how the next one will be. CI runs the same cases.
    fn config() -> ProptestConfig {
        let seed = std::env::var("LINT_FUZZ_SEED")
            .ok()
            .and_then(|seed| seed.parse().ok())
            .unwrap_or(0x2026_1202);
        ProptestConfig {
            cases: 10_000,
            failure_persistence: None,
            rng_seed: proptest::test_runner::RngSeed::Fixed(seed),
            ..ProptestConfig::default()
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn arbitrary_bytes_as_rust_never_panic_the_linter(bytes in source_like()) {
            let _ = check_file(Language::Rust, &bytes);
        }

        #[test]
        fn arbitrary_bytes_as_shell_never_panic_the_linter(bytes in source_like()) {
            let _ = check_file(Language::Shell, &bytes);
        }

        #[test]
        fn arbitrary_bytes_as_a_workflow_never_panic_the_linter(bytes in source_like()) {
            let _ = check_file(Language::Workflow, &bytes);
        }
    }

    /// The one reason a file was skipped.
    fn skipped_reason(report: &FileReport) -> &str {
        assert!(report.findings.is_empty(), "{report:?}");
        match report.skipped.as_slice() {
            [skipped] => &skipped.reason,
            other => panic!("one skipped entry, not {other:?}"),
        }
    }

    #[test]
    fn a_here_document_whose_end_word_holds_a_substitution_is_reported_not_parsed() {
        // Each of these made brush-parser ask for gigabytes (the first found by the shell
        // property test below, seed 43): the lint reports them instead, in shell and in a
        // workflow's run body alike.
        for script in [
            "cat <<$(  #",
            "if\"use\"esac<<$(  #}#!{do",
            "x <<-\"$(  #",
            "y <<a`  #",
        ] {
            let report = check_file(Language::Shell, script.as_bytes());
            assert!(
                skipped_reason(&report).starts_with("a here-document's end word holds"),
                "{script}: {report:?}"
            );
        }
        let workflow = "jobs:\n  a:\n    steps:\n      - run: cat <<$(  #\n";
        let report = check_file(Language::Workflow, workflow.as_bytes());
        assert!(
            report
                .skipped
                .iter()
                .any(|skipped| skipped.reason.starts_with("a here-document")),
            "{report:?}"
        );
    }

    #[test]
    fn a_here_document_with_no_end_word_is_reported_not_parsed() {
        // The first two made brush-parser allocate past 24 GB (drawn by the shell property
        // test, seed 126, and minimised); the others lack an end word the same way.
        for script in [
            "$(}<<  |in! #",
            "$(<<  ",
            "x=$(cat <<  ",
            "cat <<- ;",
            "a << &",
        ] {
            let report = check_file(Language::Shell, script.as_bytes());
            assert!(
                skipped_reason(&report).starts_with("a here-document (`<<`) has no end word"),
                "{script}: {report:?}"
            );
        }
    }

    #[test]
    fn a_plain_here_document_and_a_here_string_are_parsed() {
        let script = "cat <<EOF\nhello\nEOF\ngrep x <<< \"$(date)\"\n";
        let report = check_file(Language::Shell, script.as_bytes());
        assert!(report.skipped.is_empty(), "{report:?}");
    }

    #[test]
    fn a_deeply_nested_rust_file_is_reported_not_parsed() {
        let depth = 100_000;
        let text = format!("fn f() {{ {}{} }}", "(".repeat(depth), ")".repeat(depth));
        let report = check_file(Language::Rust, text.as_bytes());
        assert!(
            skipped_reason(&report).starts_with("nested too deeply to parse safely"),
            "{report:?}"
        );
    }

    #[test]
    fn a_long_run_of_rust_prefixes_is_reported_not_parsed() {
        let text = format!("fn f() {{ {}x }}", "!".repeat(100_000));
        let report = check_file(Language::Rust, text.as_bytes());
        assert!(skipped_reason(&report).starts_with("nested too deeply"));
    }

    #[test]
    fn deeply_nested_shell_and_yaml_are_reported_not_parsed() {
        let shell = "if true; then ".repeat(10_000);
        let report = check_file(Language::Shell, shell.as_bytes());
        assert!(skipped_reason(&report).starts_with("nested too deeply"));
        let yaml = format!("run: {}", "[".repeat(10_000));
        let report = check_file(Language::Workflow, yaml.as_bytes());
        assert!(skipped_reason(&report).starts_with("nested too deeply"));
    }

    /// What the bounds let through, the lint thread's stack holds: the deepest admitted file of
    /// each shape parses there (in a debug build, the deepest stack use).
    #[test]
    fn the_deepest_admitted_files_parse_on_the_lint_thread() {
        // One level is the item around the nesting.
        let deep = MAX_NESTING - 1;
        let cases = vec![
            (
                Language::Rust,
                format!("fn f() {{ {}1{} }}", "(".repeat(deep), ")".repeat(deep)),
            ),
            (
                Language::Rust,
                format!("fn f() {{ {}x }}", "!".repeat(MAX_PREFIXES)),
            ),
            (
                Language::Rust,
                format!("type T = {}u8{};", "Vec<".repeat(deep), ">".repeat(deep)),
            ),
            (
                Language::Shell,
                format!(
                    "{}true{}",
                    "if true; then ".repeat(deep),
                    "; fi".repeat(deep)
                ),
            ),
            (
                Language::Shell,
                format!("echo {}x{}", "$(".repeat(deep / 2), ")".repeat(deep / 2)),
            ),
        ];
        let reports = bounds::on_large_stack(move || {
            cases
                .into_iter()
                .map(|(language, text)| check_file(language, text.as_bytes()))
                .collect::<Vec<_>>()
        })
        .expect("the lint thread runs");
        for report in reports {
            assert!(
                report
                    .skipped
                    .iter()
                    .all(|skipped| !skipped.reason.contains("nested")),
                "{report:?}"
            );
        }
    }

    #[test]
    fn a_file_over_the_size_limit_is_reported_not_parsed() {
        let text = " ".repeat(bounds::MAX_BYTES + 1);
        let report = check_file(Language::Rust, text.as_bytes());
        assert!(skipped_reason(&report).starts_with("too large to check"));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_reported_not_parsed() {
        let report = check_file(Language::Shell, b"sleep \xff");
        assert!(skipped_reason(&report).starts_with("not UTF-8"));
    }
}
