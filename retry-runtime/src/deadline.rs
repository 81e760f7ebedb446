//! [`Deadline`], the time a ladder must fit in, and the one duration grammar (`"500ms"`, `"2s"`,
//! `"3m"`, `"1h"`) that the attribute's `budget` and `timeout`, and the CLI's `--budget`, read.

use std::fmt;
use std::time::Duration;

/// The deadline a ladder must fit in: the enclosing turn's (`Turn`), or its own, this long
/// from the call's start (`Within`). Not a retry budget: that is a [`Quota`](crate::Quota).
///
/// ```
/// use retry_runtime::Deadline;
/// use std::time::Duration;
/// assert_eq!(Deadline::default(), Deadline::Turn);
/// assert_eq!(Deadline::Within(Duration::from_secs(2)).limit(), Some(Duration::from_secs(2)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Deadline {
    /// The enclosing [`Turn`](crate::Turn)'s deadline; outside any turn only `attempts` bounds
    /// the ladder.
    #[default]
    Turn,
    /// This call's own limit, counted from its first attempt, and the enclosing turn's
    /// deadline if that comes sooner.
    Within(Duration),
}

impl Deadline {
    /// The call's own limit, if it has one.
    pub const fn limit(&self) -> Option<Duration> {
        match self {
            Deadline::Turn => None,
            Deadline::Within(limit) => Some(*limit),
        }
    }
}

/// Why a text is not a duration of the grammar [`parse_duration`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DurationError {
    /// Not a whole number followed by `ms`, `s`, `m` or `h`.
    Malformed,
    /// More milliseconds than a `u64` counts.
    TooLarge,
    /// Zero: no time at all.
    Zero,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DurationError::Malformed => {
                "not a duration: write a whole number and a unit (ms, s, m, h), like `500ms`, `2s` or `3m`"
            }
            DurationError::TooLarge => "too large to count in milliseconds",
            DurationError::Zero => "zero leaves no time at all: give a positive duration",
        })
    }
}

impl std::error::Error for DurationError {}

/// Read a duration as the attribute's `budget` and `timeout` and the CLI's `--budget` write
/// it: a whole number and one unit, `ms`, `s`, `m` or `h`, with nothing else around them.
/// The attribute parses the same grammar at compile time (a proc-macro crate cannot depend on
/// this one); one table of cases, `duration_cases.txt` in this crate, pins both.
///
/// ```
/// use retry_runtime::{parse_duration, DurationError};
/// use std::time::Duration;
///
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("3m"), Ok(Duration::from_secs(180)));
/// assert_eq!(parse_duration("2 s"), Err(DurationError::Malformed));
/// assert_eq!(parse_duration("0s"), Err(DurationError::Zero));
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or(DurationError::Malformed)?;
    let (digits, unit) = text.split_at(split);
    let per_unit: u64 = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(DurationError::Malformed),
    };
    if digits.is_empty() {
        return Err(DurationError::Malformed);
    }
    // Only digits remain, so a number that does not parse is one too long for a u64.
    let count: u64 = digits.parse().map_err(|_| DurationError::TooLarge)?;
    let millis = count.checked_mul(per_unit).ok_or(DurationError::TooLarge)?;
    if millis == 0 {
        return Err(DurationError::Zero);
    }
    Ok(Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases the attribute's parser is pinned by too (`retry-macros`' `args.rs` tests).
    const CASES: &str = include_str!("../duration_cases.txt");

    #[test]
    fn the_grammar_reads_every_shared_case_as_the_table_says() {
        let mut checked = 0;
        for line in CASES
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        {
            let (text, expected) = line.split_once(" => ").expect("`text => result`");
            let got = match parse_duration(text) {
                Ok(duration) => duration.as_millis().to_string(),
                Err(DurationError::Malformed) => "malformed".to_owned(),
                Err(DurationError::TooLarge) => "too_large".to_owned(),
                Err(DurationError::Zero) => "zero".to_owned(),
            };
            assert_eq!(got, expected.trim(), "`{text}`");
            checked += 1;
        }
        assert!(checked >= 20, "{checked} cases");
    }
}
