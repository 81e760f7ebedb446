//! Fault scripts that say a key's limits, in each provider's form: what an upstream's pacer
//! reads from every answer.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Act;

impl Act {
    /// This answer saying its key's requests as OpenAI and Azure do: `limit`, `remaining`,
    /// and the time until it is whole again as a duration (`x-ratelimit-*-requests`).
    ///
    /// ```
    /// use retry_runtime::testing::Act;
    /// use std::time::Duration;
    ///
    /// let _ = Act::ok("hi").with_openai_limits(10, 0, Duration::from_millis(1_500));
    /// ```
    pub fn with_openai_limits(self, limit: u64, remaining: u64, reset: Duration) -> Act {
        let reset = format!("{}ms", reset.as_millis());
        self.with_header("x-ratelimit-limit-requests", &limit.to_string())
            .with_header("x-ratelimit-remaining-requests", &remaining.to_string())
            .with_header("x-ratelimit-reset-requests", &reset)
    }

    /// This answer saying its key's requests as Anthropic does: `limit`, `remaining`, and
    /// when it is whole again as an RFC 3339 instant, `reset` from when the act is made
    /// (`anthropic-ratelimit-requests-*`).
    ///
    /// ```
    /// use retry_runtime::testing::Act;
    /// use std::time::Duration;
    ///
    /// let _ = Act::status(429).with_anthropic_limits(50, 0, Duration::from_secs(2));
    /// ```
    pub fn with_anthropic_limits(self, limit: u64, remaining: u64, reset: Duration) -> Act {
        let at = rfc3339(SystemTime::now() + reset);
        self.with_header("anthropic-ratelimit-requests-limit", &limit.to_string())
            .with_header(
                "anthropic-ratelimit-requests-remaining",
                &remaining.to_string(),
            )
            .with_header("anthropic-ratelimit-requests-reset", &at)
    }
}

/// An instant in RFC 3339, UTC, with milliseconds: `2026-12-05T04:10:31.250Z`.
fn rfc3339(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let of_era = z - era * 146_097;
    let year_of_era = (of_era - of_era / 1_460 + of_era / 36_524 - of_era / 146_096) / 365;
    let day_of_year = of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted + 2) / 5 + 1;
    let month = if shifted < 10 {
        shifted + 3
    } else {
        shifted - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instant_reads_back_as_itself() {
        let at = UNIX_EPOCH + Duration::from_millis(1_796_443_831_250);
        assert_eq!(rfc3339(at), "2026-12-05T04:10:31.250Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000Z"
        );
    }
}
