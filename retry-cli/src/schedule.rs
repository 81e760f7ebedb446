//! `backoff schedule`: the whole ladder, as a person reads it.

use std::fmt::Write;

use retry_runtime::{Class, Policy, RateLimit, ladder};

use crate::cli::format_wait;

/// The ladder of `policy`: each retry's ideal wait and its jittered range, and the worst case.
pub(crate) fn render(policy: &Policy) -> String {
    let jitter = policy.jitter();
    let retried: Vec<&str> = Class::ALL
        .iter()
        .filter(|class| policy.retries(class))
        .map(Class::name)
        .collect();
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "policy {}: {} attempts; retries {}; {} jitter",
        policy.name(),
        policy.attempts(),
        retried.join(", "),
        jitter.name()
    );
    let _ = writeln!(out, "retry\tideal\tfrom\tup to");
    for retry in 1..policy.attempts() {
        let ideal = ladder::ideal_wait(policy, retry);
        let lowest = ideal * jitter.min_factor_percent() / 100;
        let highest = ladder::max_wait(policy, retry);
        let _ = writeln!(
            out,
            "{retry}\t{}\t{}\t{}",
            format_wait(ideal, false),
            format_wait(lowest, false),
            format_wait(highest, false)
        );
    }
    if let RateLimit::Once { wait } = policy.rate_limit() {
        let _ = writeln!(
            out,
            "a rate limit is retried once, after its Retry-After or {} s",
            wait.as_secs()
        );
    }
    let _ = writeln!(
        out,
        "worst case: {} s of waiting",
        format_wait(policy.worst_case_wait(), false)
    );
    out
}
