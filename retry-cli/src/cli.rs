//! The command line: the subcommands, and how each one ends.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::delay::{Delay, Sleep};
use crate::error::CliError;
use crate::explain::Explain;
use crate::lint::Lint;
use crate::run::Run;
use crate::schedule::Schedule;

/// The retry ladder of retry-runtime, for shell scripts and CI workflows.
#[derive(Debug, Parser)]
#[command(name = "backoff", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the wait after attempt N fails, in seconds (or milliseconds with --ms).
    Delay(Delay),
    /// Sleep the wait after attempt N fails.
    Sleep(Sleep),
    /// Print the policy's whole ladder and its worst case.
    Schedule(Schedule),
    /// Say what the library makes of an HTTP response: its class, whether the policy retries
    /// it, the wait, and the rule that decided.
    Explain(Explain),
    /// Run a command, retrying it while it exits with a "try again" status; exit with its last
    /// status.
    Run(Run),
    /// Find the retry loops that compute their own wait, in Rust sources, shell scripts and
    /// GitHub Actions workflows; exit 1 when there are any.
    ///
    /// A retry loop waits, and leaves or repeats on whether an attempt succeeded (`break` or
    /// `return` on success, `continue` or an `Err` arm on failure, `until cmd`, `while ! cmd`,
    /// `cmd && break`). Each one that computes its own wait is reported as `path:line:col:` and
    /// the waiting words only, then a help line naming the fix: `#[retry]` or
    /// `Retry::new(..).run(..)` in Rust, `backoff sleep`, `backoff run` or `sleep "$(backoff
    /// delay ...)"` in shell. A loop that waits every round whatever happens (a ticker) is not
    /// a retry.
    ///
    /// Each PATH is walked as ripgrep walks it: `.gitignore` is honoured, and so is a
    /// `.backoff-lint-ignore` file in the same syntax (for fixture trees). Checked: Rust
    /// (`.rs`), shell (`.sh`, `.bash`, or a `#!` line naming sh or bash) and the `run:` bodies
    /// of GitHub Actions workflows (`.github/workflows/*.yml` or `*.yaml`), at the YAML's own
    /// lines. Rust loops written inside macro bodies (`select!`, `join!`) are not seen.
    ///
    /// A comment `backoff-lint: allow(<reason>)` on the line before a loop exempts it; an
    /// allow without a reason is itself a finding.
    ///
    /// Exit status: 0 when nothing was found, 1 when something was, 2 on bad input only (a
    /// path that cannot be read, a file that does not parse, or is too large or too deeply
    /// nested to parse safely: it is reported with its place and skipped, and the rest are
    /// still checked).
    Lint(Lint),
}

impl Cli {
    pub(crate) async fn run(self) -> ExitCode {
        let outcome = match self.command {
            Command::Delay(delay) => delay.print(),
            Command::Sleep(sleep) => sleep.sleep().await,
            Command::Schedule(schedule) => schedule.print(),
            Command::Explain(explain) => explain.print(),
            Command::Run(run) => run.execute().await,
            Command::Lint(lint) => lint.check(),
        };
        outcome.unwrap_or_else(CliError::report)
    }
}
