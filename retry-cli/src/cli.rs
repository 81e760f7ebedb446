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
