//! `backoff delay` and `backoff sleep`: one wait of the ladder, printed or slept.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use retry_runtime::{Draw, Policy, ladder};

use crate::error::CliError;
use crate::flags::{DrawArgs, PolicyArgs};
use crate::output::{self, format_wait, json_ms};
use crate::skipping_clock::skip_waits;

/// Which wait: the policy, the attempt that failed and the draw.
#[derive(Debug, Args)]
pub(crate) struct WaitArgs {
    #[command(flatten)]
    policy: PolicyArgs,
    /// The attempt that just failed, from 1: the wait before retry N.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), allow_negative_numbers = true)]
    attempt: u32,
    #[command(flatten)]
    draw: DrawArgs,
}

impl WaitArgs {
    fn wait(&self) -> Result<(Policy, Duration), String> {
        let policy = self.policy.policy()?;
        // The rung, as the ladder jitters it: `backoff delay` asks for no failure's rules.
        let ideal = ladder::ideal_wait(&policy, self.attempt);
        Ok((
            policy,
            ladder::jittered(ideal, policy.jitter(), self.draw.draw()),
        ))
    }
}

/// `backoff delay`.
#[derive(Debug, Args)]
pub(crate) struct Delay {
    #[command(flatten)]
    wait: WaitArgs,
    /// Print whole milliseconds instead of seconds.
    #[arg(long)]
    ms: bool,
    /// Print one JSON object instead: `policy` (its name), `attempt`, `wait_ms` (the wait),
    /// `ideal_ms` (the unjittered wait), `from_ms` and `up_to_ms` (the jitter's range: the
    /// wait is at least `from_ms` and below `up_to_ms`, or equal to it without jitter). Waits
    /// are whole milliseconds, rounded down.
    #[arg(long)]
    json: bool,
}

impl Delay {
    pub(crate) fn print(&self) -> Result<ExitCode, CliError> {
        let (policy, wait) = self.wait.wait()?;
        let mut out = output::stdout();
        if self.json {
            let retry = self.wait.attempt;
            let ideal = ladder::ideal_wait(&policy, retry);
            let object = serde_json::json!({
                "policy": policy.name(),
                "attempt": retry,
                "wait_ms": json_ms(wait),
                "ideal_ms": json_ms(ideal),
                "from_ms": json_ms(ladder::jittered(ideal, policy.jitter(), Draw::from_bits(0))),
                "up_to_ms": json_ms(ladder::max_wait(&policy, retry)),
            });
            writeln!(out, "{object}")?;
        } else {
            writeln!(out, "{}", format_wait(wait, self.ms))?;
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }
}

/// `backoff sleep`.
#[derive(Debug, Args)]
pub(crate) struct Sleep {
    #[command(flatten)]
    wait: WaitArgs,
}

impl Sleep {
    pub(crate) async fn sleep(&self) -> Result<ExitCode, CliError> {
        let (_, wait) = self.wait.wait()?;
        if skip_waits() {
            output::say(format_args!("would sleep {}", format_wait(wait, false)));
        } else {
            tokio::time::sleep(wait).await;
        }
        Ok(ExitCode::SUCCESS)
    }
}
