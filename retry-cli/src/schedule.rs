//! `backoff schedule`: the whole ladder, streamed a row at a time.
//!
//! Each row is computed from the one before with the library's own arithmetic and a constant
//! amount of work: the next ideal wait is rung 2 of a ladder whose first rung is this one (at
//! most one growth step inside [`ladder::ideal_wait`]), never the whole ladder again from
//! retry 1. Rows are written as they are made, so `| head -1` stops the work early and no row
//! count builds a string in memory.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use retry_runtime::{Class, Draw, Policy, RateLimit, ladder};

use crate::error::CliError;
use crate::flags::PolicyArgs;
use crate::output::{self, format_wait, json_ms};

/// `backoff schedule`.
#[derive(Debug, Args)]
pub(crate) struct Schedule {
    #[command(flatten)]
    policy: PolicyArgs,
    /// Print one JSON object instead: `policy` (its name), `attempts`, `retried` (the class
    /// names it retries), `jitter`, `max_retry_after_ms` (the longest hint it honours),
    /// `rate_limit_once_ms` (the wait of its single rate-limit retry, or null when rate limits
    /// follow the ladder), `worst_case_ms` (all the waiting the ladder can do, hints aside),
    /// and last `rows`: one object per retry with `retry` (from 1), `ideal_ms`, `from_ms` and
    /// `up_to_ms`, where the wait before that retry is at least `from_ms` and below `up_to_ms`
    /// (equal to it without jitter). Waits are whole milliseconds, rounded down.
    #[arg(long)]
    json: bool,
}

impl Schedule {
    pub(crate) fn print(&self) -> Result<ExitCode, CliError> {
        let policy = self.policy.policy()?;
        let mut out = output::stdout();
        if self.json {
            write_json(&policy, &mut out)?;
        } else {
            write_table(&policy, &mut out)?;
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }
}

/// One retry of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Row {
    /// The retry this wait comes before, from 1.
    retry: u32,
    /// The unjittered wait.
    ideal: Duration,
    /// The shortest wait any draw gives.
    lowest: Duration,
    /// The least upper bound of the wait (the ideal itself without jitter).
    highest: Duration,
}

/// The rows of a policy's ladder, each from the one before. `ideal_wait` is
/// [`ladder::ideal_wait`]; a test passes one that counts its calls.
pub(crate) struct Rows<IdealWait> {
    policy: Policy,
    next_retry: u32,
    previous_ideal: Option<Duration>,
    ideal_wait: IdealWait,
}

impl<IdealWait: FnMut(&Policy, u32) -> Duration> Rows<IdealWait> {
    pub(crate) fn new(policy: Policy, ideal_wait: IdealWait) -> Self {
        Rows {
            policy,
            next_retry: 1,
            previous_ideal: None,
            ideal_wait,
        }
    }
}

impl<IdealWait: FnMut(&Policy, u32) -> Duration> Iterator for Rows<IdealWait> {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        if self.next_retry >= self.policy.attempts() {
            return None;
        }
        let ideal = match self.previous_ideal {
            None => (self.ideal_wait)(&self.policy, 1),
            // The ladder's rung 2 from a base of the previous rung is one growth step, capped,
            // exactly as the library takes it from rung n to n + 1.
            Some(previous) => (self.ideal_wait)(&self.policy.with_base(previous), 2),
        };
        // A ladder starting at this rung: its rung 1 is this rung, so `max_wait` does no
        // growth steps.
        let rung = self.policy.with_base(ideal);
        let row = Row {
            retry: self.next_retry,
            ideal,
            lowest: ladder::jittered(ideal, self.policy.jitter(), Draw::from_bits(0)),
            highest: ladder::max_wait(&rung, 1),
        };
        self.previous_ideal = Some(ideal);
        self.next_retry += 1;
        Some(row)
    }
}

fn rows(policy: &Policy) -> Rows<impl FnMut(&Policy, u32) -> Duration> {
    Rows::new(*policy, ladder::ideal_wait)
}

fn retried(policy: &Policy) -> Vec<&'static str> {
    Class::ALL
        .iter()
        .filter(|class| policy.retries(class))
        .map(Class::name)
        .collect()
}

/// The ladder as a person reads it: each retry's ideal wait and its jittered range, and the
/// worst case.
fn write_table(policy: &Policy, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "policy {}: {} attempts; retries {}; {} jitter",
        policy.name(),
        policy.attempts(),
        retried(policy).join(", "),
        policy.jitter().name()
    )?;
    writeln!(out, "retry\tideal\tfrom\tup to")?;
    for row in rows(policy) {
        writeln!(
            out,
            "{}\t{}\t{}\t{}",
            row.retry,
            format_wait(row.ideal, false),
            format_wait(row.lowest, false),
            format_wait(row.highest, false)
        )?;
    }
    if let RateLimit::Once { wait } = policy.rate_limit() {
        writeln!(
            out,
            "a rate limit is retried once, after its Retry-After or {} s",
            wait.as_secs()
        )?;
    }
    writeln!(
        out,
        "worst case: {} s of waiting",
        format_wait(policy.worst_case_wait(), false)
    )
}

/// The ladder as one JSON object, its rows last and written as they are made.
fn write_json(policy: &Policy, out: &mut impl Write) -> io::Result<()> {
    let rate_limit_once_ms = match policy.rate_limit() {
        RateLimit::Once { wait } => Some(json_ms(wait)),
        RateLimit::Ladder => None,
    };
    let head = serde_json::json!({
        "policy": policy.name(),
        "attempts": policy.attempts(),
        "retried": retried(policy),
        "jitter": policy.jitter().name(),
        "max_retry_after_ms": json_ms(policy.max_retry_after()),
        "rate_limit_once_ms": rate_limit_once_ms,
        "worst_case_ms": json_ms(policy.worst_case_wait()),
    });
    // The head without its closing brace, then the rows streamed into its last field.
    let head = head.to_string();
    let open = head.strip_suffix('}').unwrap_or(&head);
    write!(out, "{open},\"rows\":[")?;
    for (index, row) in rows(policy).enumerate() {
        let separator = if index == 0 { "" } else { "," };
        let row = serde_json::json!({
            "retry": row.retry,
            "ideal_ms": json_ms(row.ideal),
            "from_ms": json_ms(row.lowest),
            "up_to_ms": json_ms(row.highest),
        });
        write!(out, "{separator}{row}")?;
    }
    writeln!(out, "]}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::MAX_ATTEMPTS;

    fn policies() -> [Policy; 6] {
        [
            Policy::AVAILABILITY,
            Policy::OUTAGE,
            Policy::TRANSIENT,
            Policy::TRANSIENT.with_multiplier(1.6),
            Policy::AVAILABILITY
                .with_base(Duration::from_millis(1))
                .with_multiplier(1.001)
                .with_cap(Duration::MAX),
            Policy::OUTAGE.with_multiplier(1.0),
        ]
    }

    #[test]
    fn every_row_is_the_librarys_own_wait_for_that_retry() {
        for policy in policies() {
            let policy = policy.with_attempts(MAX_ATTEMPTS);
            for row in rows(&policy) {
                let ideal = ladder::ideal_wait(&policy, row.retry);
                assert_eq!(row.ideal, ideal, "{policy:?} retry {}", row.retry);
                assert_eq!(row.highest, ladder::max_wait(&policy, row.retry));
                assert_eq!(
                    row.lowest,
                    ladder::jittered(ideal, policy.jitter(), Draw::from_bits(0))
                );
            }
        }
    }

    /// Constant work per row, counted rather than timed: one evaluation of the ladder per row,
    /// and never for a rung past 2, where `ideal_wait` does at most one growth step.
    #[test]
    fn each_row_costs_one_ladder_evaluation_of_at_most_one_growth_step() {
        for policy in policies() {
            let policy = policy.with_attempts(u32::MAX);
            let mut evaluations = 0u64;
            let mut furthest_rung = 0;
            let counted = Rows::new(policy, |policy: &Policy, retry| {
                evaluations += 1;
                furthest_rung = furthest_rung.max(retry);
                ladder::ideal_wait(policy, retry)
            });
            let printed = counted.take(100_000).count();
            assert_eq!(printed, 100_000);
            assert_eq!(evaluations, 100_000);
            assert!(furthest_rung <= 2, "{furthest_rung}");
        }
    }

    #[test]
    fn one_attempt_has_no_rows() {
        assert_eq!(rows(&Policy::AVAILABILITY.with_attempts(1)).count(), 0);
    }
}
