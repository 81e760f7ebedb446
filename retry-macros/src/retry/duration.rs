//! The duration grammar of `budget` and `timeout`: a whole number and one unit, `ms`, `s`, `m`
//! or `h`, with nothing around them; zero is refused, as is more milliseconds than a `u64`
//! counts.
//!
//! It is the runtime's `retry_runtime::budget::parse_duration`, which a proc-macro crate cannot
//! call; one table of cases, `retry-runtime/duration_cases.txt`, pins both (see the tests).

use super::key::Key;
use crate::suggest;

/// Why a text is not a duration; the message is worded from it, per key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DurationError {
    /// Not a whole number followed by `ms`, `s`, `m` or `h`.
    Malformed,
    /// More milliseconds than a `u64` counts.
    TooLarge,
    /// Zero: no time at all.
    Zero,
}

/// A duration literal (`"500ms"`, `"2s"`, `"3m"`, `"1h"`) in milliseconds.
pub(crate) fn millis(text: &str) -> Result<u64, DurationError> {
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
    Ok(millis)
}

/// Why `key = "text"` is refused, worded for the key (`budget` also takes `"turn"`, `timeout`
/// does not).
pub(crate) fn message(key: Key, text: &str, error: DurationError) -> String {
    let name = key.name();
    let takes_turn = key == Key::Budget;
    match error {
        DurationError::Malformed => {
            let hint = if takes_turn && !text.chars().any(|c| c.is_ascii_digit()) {
                suggest::nearest(text, &["turn"], &[])
                    .map(|near| format!("; did you mean `\"{near}\"`?"))
                    .unwrap_or_default()
            } else {
                String::new()
            };
            let turn_or = if takes_turn { "`\"turn\"` or " } else { "" };
            format!(
                "malformed duration `\"{text}\"`; `{name}` takes {turn_or}a whole number and a \
                 unit (`ms`, `s`, `m`, `h`), like `\"500ms\"`, `\"2s\"` or `\"3m\"`{hint}"
            )
        }
        DurationError::TooLarge => {
            format!("`\"{text}\"` is too long a {name} to count in milliseconds")
        }
        DurationError::Zero => {
            let or_turn = if takes_turn {
                ", or `\"turn\"` for the enclosing turn's"
            } else {
                ""
            };
            format!(
                "`{name} = \"{text}\"` leaves no time at all; give a positive duration{or_turn}"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runtime's table of cases, which its `parse_duration` is pinned by too.
    const CASES: &str = include_str!("../../duration_cases.txt");

    #[test]
    fn the_grammar_reads_every_shared_case_as_the_runtimes_table_says() {
        let mut checked = 0;
        for line in CASES
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        {
            let (text, expected) = line
                .split_once(" => ")
                .unwrap_or_else(|| panic!("`{line}` is not `text => result`"));
            let got = match millis(text) {
                Ok(millis) => millis.to_string(),
                Err(DurationError::Malformed) => "malformed".to_owned(),
                Err(DurationError::TooLarge) => "too_large".to_owned(),
                Err(DurationError::Zero) => "zero".to_owned(),
            };
            assert_eq!(got, expected.trim(), "`{text}`");
            checked += 1;
        }
        assert!(checked >= 20, "only {checked} cases read");
    }

    #[test]
    fn messages_are_worded_for_the_key() {
        let malformed = message(Key::Budget, "2", DurationError::Malformed);
        assert!(malformed.starts_with("malformed duration `\"2\"`; `budget` takes `\"turn\"` or"));
        let malformed = message(Key::Timeout, "2", DurationError::Malformed);
        assert!(malformed.starts_with("malformed duration `\"2\"`; `timeout` takes a whole"));
        assert_eq!(
            message(Key::Timeout, "0s", DurationError::Zero),
            "`timeout = \"0s\"` leaves no time at all; give a positive duration"
        );
        assert!(message(Key::Budget, "0s", DurationError::Zero).ends_with("enclosing turn's"));
        assert_eq!(
            message(Key::Budget, "99999999999h", DurationError::TooLarge),
            "`\"99999999999h\"` is too long a budget to count in milliseconds"
        );
    }

    #[test]
    fn a_near_miss_of_turn_is_suggested() {
        assert!(
            message(Key::Budget, "trun", DurationError::Malformed)
                .ends_with("did you mean `\"turn\"`?")
        );
        assert!(!message(Key::Timeout, "trun", DurationError::Malformed).contains("turn"));
    }
}
