//! The flags the subcommands share: the policy and its adjustments, the jitter draw, and their
//! limits. Every parser says what is wrong with a value and what to type instead.

use std::time::Duration;

use clap::Args;
use retry_runtime::{
    Clock, Deadline, Draw, DurationError, Jitter, Policy, TokioClock, parse_duration,
};

/// The most attempts backoff takes. A thousand attempts at a one-minute cap is over 16 hours
/// of waiting, longer than a CI job may run (6 h on GitHub's hosted runners); a larger number
/// is a typo or a wish for "forever", which `--budget` says better. It also bounds the rows
/// `schedule` prints.
pub(crate) const MAX_ATTEMPTS: u32 = 1000;

/// The longest budget backoff takes: a week, longer than any CI job runs (5 days on a
/// self-hosted GitHub runner). A longer one is a typo; no budget at all is `--budget` left out.
pub(crate) const MAX_BUDGET: Duration = Duration::from_secs(7 * 24 * 3600);

/// The jitter draw: random unless fixed.
#[derive(Debug, Args)]
pub(crate) struct DrawArgs {
    /// Use this draw in [0, 1) instead of a random one (reproducible waits).
    // A negative number reaches the parser, which says what a draw is, instead of clap reading
    // `-0.1` as a flag named `-0`.
    #[arg(
        long,
        value_parser = parse_draw,
        conflicts_with = "no_jitter",
        allow_negative_numbers = true
    )]
    draw: Option<f64>,
    /// Wait the ideal, unjittered value.
    #[arg(long)]
    no_jitter: bool,
}

impl DrawArgs {
    /// The draw asked for, or a random one from the engine's own source.
    pub(crate) fn draw(&self) -> Draw {
        self.fixed().unwrap_or_else(|| TokioClock.draw())
    }

    /// The draw, if the flags fixed one (`--draw` or `--no-jitter`).
    pub(crate) fn fixed(&self) -> Option<Draw> {
        match (self.no_jitter, self.draw) {
            (true, _) => Some(Draw::IDEAL),
            (false, Some(unit)) => Some(Draw::from_unit(unit)),
            (false, None) => None,
        }
    }
}

/// A built-in policy, adjusted by flags, as the attribute adjusts it by keys.
#[derive(Debug, Args)]
pub(crate) struct PolicyArgs {
    /// The built-in policy: `availability` (4 attempts; 250, 500, 1000 ms; equal jitter: a
    /// blip, under two seconds), `outage` (4 attempts; at least 5, 15, 45 s; above jitter: an
    /// outage waited out) or `transient` (5 attempts; 1, 2, 4, 8 s capped at 16 s;
    /// proportional jitter: a script's flaky step).
    #[arg(long, default_value = "availability", value_parser = policy_names())]
    policy: String,
    /// Attempts in all, the first included; at most 1000.
    #[arg(long, value_parser = parse_attempts, allow_negative_numbers = true)]
    attempts: Option<u32>,
    /// The first ideal wait, in milliseconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    base_ms: Option<u64>,
    /// The longest ideal wait, in milliseconds (jitter applies after it).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    cap_ms: Option<u64>,
    /// Each ideal wait over the one before, at least 1.
    #[arg(long, value_parser = parse_multiplier, allow_negative_numbers = true)]
    multiplier: Option<f64>,
    /// How waits are spread around their ideal: `proportional` [0.5, 1.5), `equal` [0.5, 1),
    /// `full` [0, 1), `above` [1, 1.2) or `none`.
    #[arg(long, value_parser = jitter_names())]
    jitter: Option<String>,
}

/// The built-in policies' names, from the library's one table.
fn policy_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Policy::BUILT_IN.map(|policy| policy.name()))
}

/// The jitters' names, from the library's one table.
fn jitter_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Jitter::ALL.map(Jitter::name))
}

impl PolicyArgs {
    /// The policy, or what is wrong with it, in the flags' terms.
    pub(crate) fn policy(&self) -> Result<Policy, String> {
        // clap accepted only names from the same table.
        let mut policy = *Policy::named(&self.policy)
            .ok_or_else(|| format!("unknown policy `{}`", self.policy))?;
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
        if let Some(jitter) = &self.jitter {
            let jitter =
                Jitter::named(jitter).ok_or_else(|| format!("unknown jitter `{jitter}`"))?;
            policy = policy.with_jitter(jitter);
        }
        policy.check().map_err(|problem| {
            format!("the policy `{}` as adjusted: {problem} (flags: --base-ms, --cap-ms, --multiplier, --attempts)", policy.name())
        })?;
        Ok(policy)
    }
}

/// A budget such as `500ms`, `30s`, `2m`, `1h`, at most [`MAX_BUDGET`]: the library's one
/// duration grammar, which the attribute's `budget` reads too.
pub(crate) fn parse_budget(text: &str) -> Result<Deadline, String> {
    let too_large = || {
        format!(
            "`{text}` is too large for a budget: use at most a week, like `168h`, or leave out --budget for none"
        )
    };
    match parse_duration(text) {
        Ok(budget) if budget <= MAX_BUDGET => Ok(Deadline::Within(budget)),
        Ok(_) | Err(DurationError::TooLarge) => Err(too_large()),
        Err(DurationError::Zero) => Err(format!(
            "`{text}` is not a usable budget: use a positive duration, like `30s`"
        )),
        Err(_) => Err(format!(
            "malformed duration `{text}`: use a whole number and a unit (ms, s, m, h), like `30s` or `2m`"
        )),
    }
}

/// A draw in [0, 1).
fn parse_draw(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(draw) if (0.0..1.0).contains(&draw) => Ok(draw),
        _ => Err(format!(
            "`{text}` is not a draw in [0, 1); use one like 0.5"
        )),
    }
}

fn parse_multiplier(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(multiplier) if multiplier.is_finite() && multiplier >= 1.0 => Ok(multiplier),
        _ => Err(format!(
            "`{text}` is not a multiplier of at least 1; use one like 2 or 1.5"
        )),
    }
}

/// An attempt count from 1 to [`MAX_ATTEMPTS`].
fn parse_attempts(text: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "`{text}` is not a number of attempts; use a whole number from 1 to {MAX_ATTEMPTS}, like 4"
        ));
    }
    // Only digits: a number that does not parse is too large for u32, and so for the limit.
    match text.parse::<u32>() {
        Ok(0) => Err("0 attempts would never run anything; use 1 for no retries".into()),
        Ok(attempts) if attempts <= MAX_ATTEMPTS => Ok(attempts),
        _ => Err(format!(
            "`{text}` attempts is more than backoff takes (at most {MAX_ATTEMPTS}); bound the time with --budget instead, like `--budget 2h`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_parsed_in_each_unit_and_bounded_by_a_week() {
        assert_eq!(
            parse_budget("500ms"),
            Ok(Deadline::Within(Duration::from_millis(500)))
        );
        assert_eq!(
            parse_budget("2m"),
            Ok(Deadline::Within(Duration::from_secs(120)))
        );
        assert_eq!(parse_budget("168h"), Ok(Deadline::Within(MAX_BUDGET)));
        for too_large in ["169h", "99999999999h", "99999999999999999999999s"] {
            let message = parse_budget(too_large).unwrap_err();
            assert!(message.contains("too large"), "{message}");
        }
        for malformed in ["h", "2 minutes", "-5s", "5", "5d", ""] {
            let message = parse_budget(malformed).unwrap_err();
            assert!(message.contains("malformed"), "{malformed}: {message}");
        }
    }
}
