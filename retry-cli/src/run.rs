//! `backoff run`: run a command, retrying it while its exit status (and, if asked, its stderr)
//! says "try again".
//!
//! backoff's own lines name the command and its status, never its arguments: they may hold a
//! token (`curl -H "Authorization: ..."`), and CI logs are read by many.

use std::fmt;
use std::process::{ExitCode, ExitStatus, Stdio};

use clap::Args;
use retry_runtime::{Class, Classify, Deadline, Retry, notice};

use crate::error::CliError;
use crate::flags::{PolicyArgs, parse_budget};
use crate::output;
use crate::skipping_clock::{SkippingClock, skip_waits};
use crate::stderr_match::StderrPattern;

/// sysexits.h's EX_TEMPFAIL: "temporary failure, the user is invited to retry".
const EX_TEMPFAIL: u8 = 75;

/// `backoff run`.
#[derive(Debug, Args)]
pub(crate) struct Run {
    #[command(flatten)]
    policy: PolicyArgs,
    /// Exit statuses that mean "try again" (comma-separated); every other status is an answer.
    /// They match a status the command exits with, never a command killed by a signal: a
    /// signal means something stopped it (a timeout, the OOM killer, a person), and a retry
    /// would fight that. So `--retry-on 137` matches `exit 137` (as a shell reports its killed
    /// child), not a SIGKILL of the command itself, which backoff reports as 137 and never
    /// retries.
    #[arg(long, value_delimiter = ',', default_values_t = [EX_TEMPFAIL])]
    retry_on: Vec<u8>,
    /// Retry a `--retry-on` status only when a line of the command's stderr also matches this
    /// regular expression. For programs that tell failures apart only in text: git exits 128
    /// for a network failure and for a failed login alike. The stderr still passes through.
    #[arg(long, value_name = "REGEX", value_parser = StderrPattern::parse)]
    retry_if_stderr: Option<StderrPattern>,
    /// Give up before a wait that would end past this budget: `30s`, `2m`, `500ms`; at most a
    /// week (`168h`).
    #[arg(long, value_parser = parse_budget)]
    budget: Option<Deadline>,
    /// The command and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// How one run of the command ended, when it did not succeed. Its `Display` is what backoff
/// prints: the status and why it was or was not retried, never the command's arguments.
#[derive(Debug)]
enum CommandFailure {
    /// It exited with this status.
    Exited {
        status: u8,
        /// Whether the status is one of `--retry-on`.
        listed: bool,
        /// Whether its stderr matched `--retry-if-stderr`, if that was given.
        stderr_matched: Option<bool>,
    },
    /// It was ended by a signal; reported as 128 + the signal, as shells do.
    Killed { signal: i32 },
    /// It could not be started.
    NotStarted { error: std::io::Error },
}

impl CommandFailure {
    fn status(&self) -> u8 {
        match self {
            CommandFailure::Exited { status, .. } => *status,
            CommandFailure::Killed { signal } => u8::try_from(128 + signal).unwrap_or(u8::MAX),
            // 127 and 126 as shells report a command not found and one not executable.
            CommandFailure::NotStarted { error }
                if error.kind() == std::io::ErrorKind::NotFound =>
            {
                127
            }
            CommandFailure::NotStarted { .. } => 126,
        }
    }

    fn is_retryable(&self) -> bool {
        matches!(
            self,
            CommandFailure::Exited {
                listed: true,
                stderr_matched: None | Some(true),
                ..
            }
        )
    }
}

impl Classify for CommandFailure {
    fn classify(&self) -> Class {
        if self.is_retryable() {
            // The command said "not now": the question stands.
            Class::Unavailable { retry_after: None }
        } else {
            Class::Definitive
        }
    }
}

impl fmt::Display for CommandFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandFailure::Exited {
                status,
                listed,
                stderr_matched,
            } => {
                write!(f, "exited with status {status}")?;
                match (listed, stderr_matched) {
                    (true, Some(true)) => f.write_str(" and its stderr matched --retry-if-stderr"),
                    (true, Some(false)) => {
                        f.write_str(", but its stderr did not match --retry-if-stderr")
                    }
                    _ => Ok(()),
                }
            }
            CommandFailure::Killed { signal } => write!(
                f,
                "was killed by signal {signal}{}, which is never retried",
                signal_name(*signal).map_or_else(String::new, |name| format!(" ({name})"))
            ),
            CommandFailure::NotStarted { error } => write!(f, "could not be started: {error}"),
        }
    }
}

impl Run {
    pub(crate) async fn execute(self) -> Result<ExitCode, CliError> {
        let policy = self.policy.policy()?;
        let [program, args @ ..] = self.command.as_slice() else {
            return Err(CliError::BadInput(
                "no command to run: give it after `--`, like `backoff run -- git push`".into(),
            ));
        };
        // The notices name the command (never its arguments); the run borrows the policy.
        // The event's sentence names the command and the class; its error is our own text
        // (the status, never the arguments, which may hold tokens).
        notice::set_process_hook(|notice| match notice.retry() {
            Some(event) => output::say(format_args!("{event} ({})", event.error)),
            None => output::say(notice),
        });
        let retry = Retry::new(&policy)
            .named_owned(std::sync::Arc::<str>::from(program.as_str()))
            .within(self.budget.unwrap_or(Deadline::Turn));
        let result = if skip_waits() {
            let clock = SkippingClock::default();
            let result = retry
                .with_clock(clock.clone())
                .run(async |_| self.attempt(program, args).await)
                .await;
            let waits: Vec<String> = clock
                .waits()
                .iter()
                .map(|wait| wait.as_millis().to_string())
                .collect();
            output::say(format_args!("waits skipped (ms): [{}]", waits.join(", ")));
            result
        } else {
            retry.run(async |_| self.attempt(program, args).await).await
        };
        Ok(match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(gave_up) => ExitCode::from(gave_up.error().status()),
        })
    }

    async fn attempt(&self, program: &str, args: &[String]) -> Result<(), CommandFailure> {
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        if self.retry_if_stderr.is_some() {
            command.stderr(Stdio::piped());
        }
        let mut child = command
            .spawn()
            .map_err(|error| CommandFailure::NotStarted { error })?;
        let stderr = child.stderr.take();
        let matching = async {
            match (&self.retry_if_stderr, stderr) {
                (Some(pattern), Some(stderr)) => Some(pattern.pass_through(stderr).await),
                _ => None,
            }
        };
        let (stderr_matched, status) = tokio::join!(matching, child.wait());
        // Waiting on a started child fails only if it was already reaped; there is no status
        // to report, so say the command could not be run.
        let status = status.map_err(|error| CommandFailure::NotStarted { error })?;
        self.judge(status, stderr_matched)
    }

    fn judge(
        &self,
        status: ExitStatus,
        stderr_matched: Option<bool>,
    ) -> Result<(), CommandFailure> {
        match status.code() {
            Some(0) => Ok(()),
            Some(code) => {
                // Statuses above 255 do not occur on Unix; clamp rather than wrap elsewhere.
                let status = u8::try_from(code).unwrap_or(u8::MAX);
                Err(CommandFailure::Exited {
                    status,
                    listed: self.retry_on.contains(&status),
                    stderr_matched,
                })
            }
            None => Err(CommandFailure::Killed {
                signal: killing_signal(&status),
            }),
        }
    }
}

#[cfg(unix)]
fn killing_signal(status: &ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.signal().unwrap_or(127)
}

#[cfg(not(unix))]
fn killing_signal(_: &ExitStatus) -> i32 {
    127
}

/// The names of the signals that commonly end a CI step (the same numbers on Linux and macOS).
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return None,
    })
}
