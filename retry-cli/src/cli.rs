//! The command line: subcommands, and the policy they share.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use retry_runtime::{Budget, Clock, Draw, Jitter, Policy, TokioClock, ladder};

use crate::{command, schedule};

/// Set to skip waits: they are printed, not slept (the CLI's own tests use it).
pub(crate) const SKIP_WAITS: &str = "BACKOFF_SKIP_WAITS";

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
    Sleep(Delay),
    /// Print the policy's whole ladder and its worst case.
    Schedule(PolicyArgs),
    /// Run a command, retrying it while it exits with a "try again" status; exit with its last
    /// status.
    Run(command::Run),
}

/// `delay` and `sleep`.
#[derive(Debug, Args)]
struct Delay {
    #[command(flatten)]
    policy: PolicyArgs,
    /// The attempt that just failed, from 1: the wait before retry N.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    attempt: u32,
    #[command(flatten)]
    draw: DrawArgs,
    /// Print whole milliseconds instead of seconds.
    #[arg(long)]
    ms: bool,
}

/// The jitter draw: random unless fixed.
#[derive(Debug, Args)]
pub(crate) struct DrawArgs {
    /// Use this draw in [0, 1) instead of a random one (reproducible waits).
    #[arg(long, value_parser = parse_draw, conflicts_with = "no_jitter")]
    draw: Option<f64>,
    /// Wait the ideal, unjittered value.
    #[arg(long)]
    no_jitter: bool,
}

impl DrawArgs {
    fn draw(&self) -> Draw {
        match (self.no_jitter, self.draw) {
            (true, _) => Draw::IDEAL,
            (false, Some(unit)) => Draw::from_unit(unit),
            // The same source as the engine's default clock.
            (false, None) => TokioClock.draw(),
        }
    }
}

/// A built-in policy, adjusted by flags, as the attribute adjusts it by keys.
#[derive(Debug, Args)]
pub(crate) struct PolicyArgs {
    /// The built-in policy.
    #[arg(long, value_enum, default_value_t = PolicyName::Availability)]
    policy: PolicyName,
    /// Attempts in all, the first included.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    attempts: Option<u32>,
    /// The first ideal wait, in milliseconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    base_ms: Option<u64>,
    /// The longest ideal wait, in milliseconds (jitter applies after it).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    cap_ms: Option<u64>,
    /// Each ideal wait over the one before, at least 1.
    #[arg(long, value_parser = parse_multiplier)]
    multiplier: Option<f64>,
    /// How waits are spread around their ideal.
    #[arg(long, value_enum)]
    jitter: Option<JitterName>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum PolicyName {
    /// 4 attempts; 250, 500, 1000 ms; equal jitter (seed 000).
    Availability,
    /// 4 attempts; 5, 15, 45 s at least; above jitter, at most a fifth longer (seed 001).
    Outage,
    /// 5 attempts; 1, 2, 4, 8 s capped at 16 s; proportional jitter (seed 004).
    Transient,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum JitterName {
    /// A factor in [0.5, 1.5).
    Proportional,
    /// A factor in [0.5, 1): never longer than stated.
    Equal,
    /// A factor in [0, 1).
    Full,
    /// A factor in [1, 1.2): never shorter than stated.
    Above,
    /// No jitter.
    None,
}

impl PolicyArgs {
    /// The policy, or what is wrong with it, in the flags' terms.
    pub(crate) fn policy(&self) -> Result<Policy, String> {
        let mut policy = match self.policy {
            PolicyName::Availability => Policy::AVAILABILITY,
            PolicyName::Outage => Policy::OUTAGE,
            PolicyName::Transient => Policy::TRANSIENT,
        };
        if let Some(attempts) = self.attempts {
            policy = policy.with_attempts(attempts);
        }
        if let Some(base) = self.base_ms {
            policy = policy.with_base(Duration::from_millis(base));
        }
        if let Some(cap) = self.cap_ms {
            policy = policy.with_cap(Duration::from_millis(cap));
        }
        if let Some(multiplier) = self.multiplier {
            policy = policy.with_multiplier(multiplier);
        }
        if let Some(jitter) = self.jitter {
            policy = policy.with_jitter(match jitter {
                JitterName::Proportional => Jitter::Proportional,
                JitterName::Equal => Jitter::Equal,
                JitterName::Full => Jitter::Full,
                JitterName::Above => Jitter::Above,
                JitterName::None => Jitter::None,
            });
        }
        policy.check().map_err(|problem| {
            format!("the policy `{}` as adjusted: {problem} (flags: --base-ms, --cap-ms, --multiplier, --attempts)", policy.name())
        })?;
        Ok(policy)
    }
}

impl Cli {
    pub(crate) async fn run(self) -> ExitCode {
        let outcome = match self.command {
            Command::Delay(delay) => delay.wait().map(|wait| {
                println!("{}", format_wait(wait, delay.ms));
                ExitCode::SUCCESS
            }),
            Command::Sleep(delay) => match delay.wait() {
                Ok(wait) => {
                    sleep(wait).await;
                    Ok(ExitCode::SUCCESS)
                }
                Err(error) => Err(error),
            },
            Command::Schedule(policy) => policy.policy().map(|policy| {
                print!("{}", schedule::render(&policy));
                ExitCode::SUCCESS
            }),
            Command::Run(run) => run.execute().await,
        };
        outcome.unwrap_or_else(|error| {
            eprintln!("backoff: {error}");
            ExitCode::from(2)
        })
    }
}

impl Delay {
    fn wait(&self) -> Result<Duration, String> {
        let policy = self.policy.policy()?;
        Ok(ladder::ladder_wait(&policy, self.attempt, self.draw.draw()))
    }
}

/// Sleep for real, or, under `BACKOFF_SKIP_WAITS`, say what would have been slept.
async fn sleep(wait: Duration) {
    if skip_waits() {
        eprintln!("backoff: would sleep {}", format_wait(wait, false));
    } else {
        tokio::time::sleep(wait).await;
    }
}

pub(crate) fn skip_waits() -> bool {
    std::env::var_os(SKIP_WAITS).is_some_and(|value| !value.is_empty() && value != "0")
}

/// Seconds with millisecond precision, as `sleep` takes them; or whole milliseconds.
pub(crate) fn format_wait(wait: Duration, ms: bool) -> String {
    if ms {
        wait.as_millis().to_string()
    } else {
        format!("{}.{:03}", wait.as_secs(), wait.subsec_millis())
    }
}

/// A budget such as `500ms`, `30s`, `2m`, `1h`.
pub(crate) fn parse_budget(text: &str) -> Result<Budget, String> {
    let malformed = || {
        format!(
            "malformed duration `{text}`: use a whole number and a unit (ms, s, m, h), like `30s` or `2m`"
        )
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(malformed)?;
    let (digits, unit) = text.split_at(split);
    let per_unit = match unit {
        "ms" => Duration::from_millis(1),
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        _ => return Err(malformed()),
    };
    let count: u32 = digits.parse().map_err(|_| malformed())?;
    per_unit
        .checked_mul(count)
        .filter(|budget| !budget.is_zero())
        .map(Budget::Within)
        .ok_or_else(|| format!("`{text}` is not a usable budget: use a positive duration"))
}

fn parse_draw(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(draw) if (0.0..1.0).contains(&draw) => Ok(draw),
        _ => Err(format!("`{text}` is not a draw in [0, 1), like 0.5")),
    }
}

fn parse_multiplier(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(multiplier) if multiplier.is_finite() && multiplier >= 1.0 => Ok(multiplier),
        _ => Err(format!(
            "`{text}` is not a multiplier of at least 1, like 2 or 1.5"
        )),
    }
}
