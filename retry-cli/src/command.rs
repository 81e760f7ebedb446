//! `backoff run`: run a command, retrying it while its exit status says "try again".

use std::fmt;
use std::process::ExitCode;

use clap::Args;
use retry_runtime::{Budget, Class, Classify, Retry, notice, testing};

use crate::cli::{PolicyArgs, parse_budget, skip_waits};

/// sysexits.h's EX_TEMPFAIL: "temporary failure, the user is invited to retry".
const EX_TEMPFAIL: u8 = 75;

/// `backoff run`.
#[derive(Debug, Args)]
pub(crate) struct Run {
    #[command(flatten)]
    policy: PolicyArgs,
    /// Exit statuses that mean "try again" (comma-separated); every other status is an answer.
    #[arg(long, value_delimiter = ',', default_values_t = [EX_TEMPFAIL])]
    retry_on: Vec<u8>,
    /// Give up before a wait that would end past this budget: `30s`, `2m`, `500ms`.
    #[arg(long, value_parser = parse_budget)]
    budget: Option<Budget>,
    /// The command and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// How one run of the command ended, when it did not succeed.
#[derive(Debug)]
enum Failure {
    /// It exited with this status.
    Exited { status: u8, retryable: bool },
    /// It was ended by a signal (reported as 128 + the signal, as shells do).
    Killed { status: u8 },
    /// It could not be started.
    NotStarted { error: std::io::Error },
}

impl Failure {
    fn status(&self) -> u8 {
        match self {
            Failure::Exited { status, .. } | Failure::Killed { status } => *status,
            // 127 and 126 as shells report a command not found and one not executable.
            Failure::NotStarted { error } if error.kind() == std::io::ErrorKind::NotFound => 127,
            Failure::NotStarted { .. } => 126,
        }
    }
}

impl Classify for Failure {
    fn classify(&self) -> Class {
        match self {
            // The command said "not now": the question stands.
            Failure::Exited {
                retryable: true, ..
            } => Class::Unavailable { retry_after: None },
            _ => Class::Definitive,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Exited { status, .. } => write!(f, "exited with status {status}"),
            Failure::Killed { status } => write!(f, "was killed (status {status})"),
            Failure::NotStarted { error } => write!(f, "could not be started: {error}"),
        }
    }
}

impl Run {
    pub(crate) async fn execute(self) -> Result<ExitCode, String> {
        let policy = self.policy.policy()?;
        let [program, args @ ..] = self.command.as_slice() else {
            return Err(
                "no command to run: give it after `--`, like `backoff run -- git push`".into(),
            );
        };
        // The notices name the command; the engine needs a 'static name, made once per process.
        let name: &'static str = Box::leak(program.clone().into_boxed_str());
        // The event's sentence names the command and the class; its error is our own text
        // (the status, never the arguments, which may hold tokens).
        notice::set_process_hook(|event| eprintln!("backoff: {event} ({})", event.error));
        let retry = Retry::new(&policy)
            .named(name)
            .within(self.budget.unwrap_or(Budget::Turn));
        let attempts = retry.run(async |_| self.attempt(program, args).await);
        let result = if skip_waits() {
            let (result, recorded) = testing::scope(attempts).await;
            let waits: Vec<String> = recorded
                .waits()
                .iter()
                .map(|wait| wait.as_millis().to_string())
                .collect();
            eprintln!("backoff: waits skipped (ms): [{}]", waits.join(", "));
            result
        } else {
            attempts.await
        };
        Ok(match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(gave_up) => ExitCode::from(gave_up.error().status()),
        })
    }

    async fn attempt(&self, program: &str, args: &[String]) -> Result<(), Failure> {
        let status = tokio::process::Command::new(program)
            .args(args)
            .status()
            .await
            .map_err(|error| Failure::NotStarted { error })?;
        match status.code() {
            Some(0) => Ok(()),
            Some(code) => {
                // Statuses above 255 do not occur on Unix; clamp rather than wrap elsewhere.
                let status = u8::try_from(code).unwrap_or(u8::MAX);
                Err(Failure::Exited {
                    status,
                    retryable: self.retry_on.contains(&status),
                })
            }
            None => Err(Failure::Killed {
                status: killed_status(&status),
            }),
        }
    }
}

#[cfg(unix)]
fn killed_status(status: &std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    status
        .signal()
        .and_then(|signal| u8::try_from(128 + signal).ok())
        .unwrap_or(u8::MAX)
}

#[cfg(not(unix))]
fn killed_status(_: &std::process::ExitStatus) -> u8 {
    u8::MAX
}
