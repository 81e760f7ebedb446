//! `backoff explain`: what the library makes of one HTTP response, or one gRPC status, and
//! why.
//!
//! The class comes from `retry_runtime::http`'s one table ([`HttpError`]), the retry decision,
//! the wait and the rule from [`ladder::decide`], the engine's own decision. Nothing here
//! classifies or decides: it only names which part of the library did. A success (any HTTP
//! status but a 4xx or a 5xx, as `check_status` and the retry layers read it; gRPC `OK`) is
//! never classified: the library hands it back unread, and there is nothing to retry.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use retry_runtime::grpc::{self, Pushback};
use retry_runtime::http::{HintSource, HttpError, Rule};
use retry_runtime::ladder::{self, Decision, Failure, Step, Why};
use retry_runtime::{
    Class, Classify, Draw, Policy, StopReason, Upstream, UpstreamEffect, Upstreams,
};

use crate::error::CliError;
use crate::flags::{DrawArgs, PolicyArgs};
use crate::output::{self, format_wait, json_ms};

/// `backoff explain`.
#[derive(Debug, Args)]
pub(crate) struct Explain {
    /// The response's status, like 429.
    #[arg(long, value_parser = parse_status, allow_negative_numbers = true, required_unless_present = "grpc", conflicts_with = "grpc")]
    status: Option<StatusCode>,
    /// A gRPC status code instead of an HTTP response, by name or number (`UNAVAILABLE`,
    /// `14`); its `grpc-retry-pushback-ms` is read from `--header`.
    #[arg(long, value_name = "CODE", value_parser = parse_grpc_code)]
    grpc: Option<i32>,
    /// A response header as `Name: value`, like `--header 'Retry-After: 30'`; repeat the flag
    /// for more.
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    headers: Vec<(HeaderName, HeaderValue)>,
    /// A file holding the response body, or `-` for stdin: the provider's error type and code
    /// are read from it.
    #[arg(long, value_name = "FILE")]
    body: Option<PathBuf>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// The attempt that got this response, from 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), allow_negative_numbers = true)]
    attempt: u32,
    #[command(flatten)]
    draw: DrawArgs,
    /// The call is on an `Upstream` its retry shares with other calls: say what this response
    /// tells it (a pause of every call on it, an outage failure toward its gate, or an answer
    /// that opens it), from the library's own `Upstream::effect_of`.
    #[arg(long)]
    upstream: bool,
    /// The call goes across an ordered set of upstreams (`Upstreams`), named in order, like
    /// `--across claude,gpt`: say where its next attempt goes after this response from the one
    /// `--from` names (default: the first), by the library's own `Upstreams::moves`.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', num_args = 1..)]
    across: Vec<String>,
    /// With `--across`, the upstream that gave this response.
    #[arg(long, value_name = "NAME", requires = "across")]
    from: Option<String>,
    /// Print one JSON object instead: `status` (null for `--grpc`); `grpc_code` (its name, or
    /// null); `class` (the class's name; null for a success: any HTTP status but a 4xx or a
    /// 5xx, or gRPC `OK`, which the library hands back unread, so nothing is retried and what
    /// the headers and the body say is null); `retry_after_ms` (the server's hint in
    /// milliseconds, or null: no hint, a gRPC pushback that says do not retry, or a hint past
    /// 2^53 ms, more than a JSON number holds exactly); `hint_source` (`retry_after_ms`,
    /// `retry_after`, `retry_info`, or null); `quota_id` (the quota a Google error names, or
    /// null); `class_rule`, the table's row that decided the class (`x_should_retry`,
    /// `provider_overloaded`, `provider_quota_refused`, `provider_context_overflow`,
    /// `google_daily_quota`, `x_ratelimit_remaining`, `status`, `grpc_code` or
    /// `grpc_retry_pushback_ms`; for a success, `status` or `grpc_code`); `error_type` and
    /// `error_code` (from the body, or null); `context_overflow`; `policy`; `attempt`;
    /// `attempts` (the policy's); `retried`; `rule`, what decided the outcome (`hint`,
    /// `cap`, `ladder` or `rate_limit_once` for a retry; `max_hint` or `max_total` for a hint
    /// the policy will not wait; `grpc_retry_pushback_ms` when the server's gRPC pushback said
    /// do not retry; `policy` for a class it does not retry, `attempts` for its last attempt,
    /// or the `class_rule` for an answer or a success); `stop_reason` (null when retried, and
    /// for a success); and, null unless retried, `wait_ms` (the wait at `--draw`, or the
    /// ideal), `wait_ideal_ms`, `wait_shortest_ms` and `wait_longest_ms` (what any draw
    /// gives). Waits are whole milliseconds, rounded down. With `--upstream`, also
    /// `upstream_rule` (`upstream_pause`, `upstream_gate` for an outage failure that counts
    /// toward opening the gate, `upstream_closes` for an answer or a success, or null) and
    /// `upstream_pause_ms` (null unless it pauses). With `--across`, also `across_rule`
    /// (`move`: the next attempt goes to `next_upstream` at once, with no wait; `ladder`: every
    /// upstream has failed in this round, so the call waits as above and starts again from the
    /// first; `stays`: a failure that does not move, decided as above; `answered`: a success)
    /// and `next_upstream` (null unless it moves).
    #[arg(long)]
    json: bool,
}

/// What was explained: an HTTP response, or a gRPC status with its pushback.
enum Answer {
    Http(HttpError),
    Grpc {
        code: i32,
        pushback: Option<Pushback>,
    },
}

impl Answer {
    /// Whether the library reads this as a success, which it never classifies: gRPC `OK`, or
    /// any HTTP status but a 4xx or a 5xx (as `check_status` and the retry layers hand it back).
    fn is_success(&self) -> bool {
        match self {
            Answer::Http(error) => {
                let status = error.status();
                !status.is_client_error() && !status.is_server_error()
            }
            Answer::Grpc { code, .. } => *code == 0,
        }
    }

    /// The class the library's table gives a failure; `None` for a success.
    fn class(&self) -> Option<Class> {
        if self.is_success() {
            return None;
        }
        Some(match self {
            Answer::Http(error) => error.classify(),
            Answer::Grpc { code, pushback } => grpc::classify_status(*code, *pushback, None, false),
        })
    }

    /// Whether the server's gRPC pushback said do not retry (A6: a negative or malformed value).
    fn pushback_stops(&self) -> bool {
        matches!(
            self,
            Answer::Grpc {
                pushback: Some(Pushback::Stop),
                ..
            }
        )
    }
}

/// The largest whole number every JSON reader holds exactly: 2^53 - 1, JavaScript's
/// `Number.MAX_SAFE_INTEGER`.
const JSON_EXACT_MAX: u64 = (1 << 53) - 1;

/// What the library made of a failure.
struct Failed {
    class: Class,
    /// The ladder's decision at the draw.
    decision: Decision,
    /// The waits the shortest, ideal and longest draws give, for a retry.
    range: Option<(Duration, Duration, Duration)>,
}

/// Everything `explain` reports, computed once for both forms.
struct Explanation {
    answer: Answer,
    /// The class and the decision; `None` for a success, which the library never classifies.
    failed: Option<Failed>,
    policy: Policy,
    attempt: u32,
    /// Whether the wait is for a fixed draw (`--draw`, `--no-jitter`).
    fixed_draw: bool,
    /// What the response tells the call's upstream, with `--upstream`.
    upstream: Option<UpstreamEffect>,
    /// Where the next attempt goes across an ordered set, with `--across`.
    across: Option<Route>,
}

/// Where the next attempt of a call across an ordered set goes after the response.
struct Route {
    rule: &'static str,
    from: String,
    next: Option<String>,
    first: String,
}

impl Explain {
    /// With `--across`, where the next attempt goes, by the library's own rule.
    fn route(&self, class: Option<Class>, policy: &Policy) -> Result<Option<Route>, CliError> {
        let Some(first) = self.across.first() else {
            return Ok(None);
        };
        let from = self.from.clone().unwrap_or_else(|| first.clone());
        let Some(at) = self.across.iter().position(|name| *name == from) else {
            let list = self.across.join(",");
            return Err(CliError::BadInput(format!(
                "`--from {from}` is not in `--across {list}`; name one of them, like `--from {first}`"
            )));
        };
        // Whether a failure moves is the set's rule, whatever upstreams it holds.
        static ONE: Upstream = Upstream::new("explained");
        static SET: Upstreams = Upstreams::new(&[&ONE]);
        let next = self.across.get(at + 1).cloned();
        let rule = match class {
            None => "answered",
            Some(class) if !SET.moves(class, policy) => "stays",
            Some(_) if next.is_some() => "move",
            Some(_) => "ladder",
        };
        Ok(Some(Route {
            rule,
            from,
            next: next.filter(|_| rule == "move"),
            first: first.clone(),
        }))
    }
}

/// What a response (`None`: a success) tells an upstream, by the library's own rule.
fn upstream_effect(class: Option<Class>, policy: &Policy) -> UpstreamEffect {
    static EXPLAINED: Upstream = Upstream::new("explained");
    class.map_or(UpstreamEffect::Clears, |class| {
        EXPLAINED.effect_of(class, policy)
    })
}

impl Explain {
    pub(crate) fn print(&self) -> Result<ExitCode, CliError> {
        let explanation = self.explain()?;
        let mut out = output::stdout();
        if self.json {
            writeln!(out, "{}", explanation.json())?;
        } else {
            explanation.write_text(&mut out)?;
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }

    fn explain(&self) -> Result<Explanation, CliError> {
        let policy = self.policy.policy()?;
        let answer = self.answer()?;
        let failed = answer.class().map(|class| self.decide(&policy, class));
        let upstream = self
            .upstream
            .then(|| upstream_effect(answer.class(), &policy));
        let across = self.route(answer.class(), &policy)?;
        Ok(Explanation {
            answer,
            failed,
            upstream,
            across,
            policy,
            attempt: self.attempt,
            fixed_draw: self.draw.fixed().is_some(),
        })
    }

    /// The response or the gRPC status, from the flags.
    fn answer(&self) -> Result<Answer, CliError> {
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            headers.append(name.clone(), value.clone());
        }
        if let Some(code) = self.grpc {
            let pushback = headers
                .get(grpc::PUSHBACK)
                .map(|value| grpc::parse_pushback(value.as_bytes()));
            return Ok(Answer::Grpc { code, pushback });
        }
        let body = self.read_body()?;
        let status = self.status.unwrap_or(StatusCode::OK);
        Ok(Answer::Http(HttpError::new(status, &headers, &body)))
    }

    /// The ladder's decision on a failure of `class`, at the draw, and the waits any draw gives.
    fn decide(&self, policy: &Policy, class: Class) -> Failed {
        let decided = ladder::decide(policy, Failure::new(self.attempt, class));
        let decision = decided.with_draw(self.draw.fixed().unwrap_or(Draw::IDEAL));
        let wait_at = |draw| decided.with_draw(draw).step.wait().unwrap_or_default();
        let range = decision.step.wait().map(|_| {
            (
                wait_at(Draw::from_bits(0)),
                wait_at(Draw::IDEAL),
                wait_at(Draw::from_bits(u32::MAX)),
            )
        });
        Failed {
            class,
            decision,
            range,
        }
    }

    fn read_body(&self) -> Result<Vec<u8>, CliError> {
        let Some(path) = &self.body else {
            return Ok(Vec::new());
        };
        let read = if path.as_os_str() == "-" {
            let mut body = Vec::new();
            std::io::stdin().read_to_end(&mut body).map(|_| body)
        } else {
            std::fs::read(path)
        };
        read.map_err(|error| {
            CliError::BadInput(format!(
                "cannot read the body from `{}`: {error}; give a file that holds the response body, or `-` for stdin",
                path.display()
            ))
        })
    }
}

impl Explanation {
    /// The ladder's rule by name; for an answer or a success, the table's row that made it
    /// one; for a gRPC pushback that said do not retry, its own.
    fn rule_name(&self) -> &'static str {
        let Some(failed) = &self.failed else {
            return self.class_rule_name();
        };
        match failed.decision.step {
            Step::Stop(StopReason::Definitive) => self.class_rule_name(),
            Step::Stop(reason) if self.pushback_stopped(reason) => "grpc_retry_pushback_ms",
            _ => failed.decision.rule.name(),
        }
    }

    /// Whether `reason` is the stop a gRPC "do not retry" pushback makes: its hint of forever
    /// is longer than any policy waits.
    fn pushback_stopped(&self, reason: StopReason) -> bool {
        self.answer.pushback_stops()
            && matches!(reason, StopReason::RetryAfterTooLong { wanted, .. } if wanted == Duration::MAX)
    }

    /// The server's hint in whole milliseconds, as JSON gives it: `None` if there is none, if
    /// it is a gRPC "do not retry" (which the library reads as a hint of forever), or if it is
    /// past what a JSON number holds exactly. Never a sentinel.
    fn retry_after_ms(&self) -> Option<u64> {
        let hint = self.failed.as_ref()?.class.retry_after()?;
        Some(json_ms(hint)).filter(|&ms| ms <= JSON_EXACT_MAX)
    }

    /// The table's row that decided the class, by name; for a success, the status or the code
    /// that made it one.
    fn class_rule_name(&self) -> &'static str {
        match &self.answer {
            Answer::Http(_) if self.failed.is_none() => "status",
            Answer::Http(error) => error.rule().name(),
            Answer::Grpc {
                pushback: Some(_), ..
            } if self.failed.is_some() => "grpc_retry_pushback_ms",
            Answer::Grpc { .. } => "grpc_code",
        }
    }

    fn stop_reason(&self) -> Option<StopReason> {
        self.failed.as_ref()?.decision.step.stop_reason()
    }

    fn json(&self) -> serde_json::Value {
        let step = self
            .failed
            .as_ref()
            .map(|failed| (failed.decision.step, failed.range));
        let (wait, ideal, shortest, longest) = match step {
            Some((Step::Retry { wait }, Some((shortest, ideal, longest)))) => (
                Some(json_ms(wait)),
                Some(json_ms(ideal)),
                Some(json_ms(shortest)),
                Some(json_ms(longest)),
            ),
            _ => (None, None, None, None),
        };
        let (status, grpc_code, error) = match &self.answer {
            Answer::Http(error) => (Some(error.status().as_u16()), None, Some(error)),
            Answer::Grpc { code, .. } => (None, grpc::code_name(*code), None),
        };
        // The library never reads a success's headers or body.
        let error = error.filter(|_| self.failed.is_some());
        let mut json = serde_json::json!({
            "status": status,
            "grpc_code": grpc_code,
            "class": self.failed.as_ref().map(|failed| failed.class.name()),
            "retry_after_ms": self.retry_after_ms(),
            "hint_source": error.and_then(HttpError::hint_source).map(hint_source_name),
            "quota_id": error.and_then(HttpError::quota_id),
            "class_rule": self.class_rule_name(),
            "error_type": error.and_then(HttpError::error_type),
            "error_code": error.and_then(HttpError::error_code),
            "context_overflow": error.is_some_and(HttpError::is_context_overflow),
            "policy": self.policy.name(),
            "attempt": self.attempt,
            "attempts": self.policy.attempts(),
            "retried": wait.is_some(),
            "rule": self.rule_name(),
            "stop_reason": self.stop_reason().map(|reason| reason.name()),
            "wait_ms": wait,
            "wait_ideal_ms": ideal,
            "wait_shortest_ms": shortest,
            "wait_longest_ms": longest,
        });
        if let Some(effect) = self.upstream {
            let (rule, pause) = match effect {
                UpstreamEffect::Pause(pause) => (Some("upstream_pause"), Some(json_ms(pause))),
                UpstreamEffect::Outage => (Some("upstream_gate"), None),
                UpstreamEffect::Clears => (Some("upstream_closes"), None),
                UpstreamEffect::Nothing => (None, None),
            };
            json["upstream_rule"] = serde_json::json!(rule);
            json["upstream_pause_ms"] = serde_json::json!(pause);
        }
        if let Some(route) = &self.across {
            json["across_rule"] = serde_json::json!(route.rule);
            json["next_upstream"] = serde_json::json!(route.next);
        }
        json
    }

    fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        match &self.answer {
            Answer::Http(error) => writeln!(out, "response: {error}")?,
            Answer::Grpc { code, .. } => writeln!(
                out,
                "response: gRPC status {} ({code})",
                grpc::code_name(*code).unwrap_or("?")
            )?,
        }
        let Some(failed) = &self.failed else {
            writeln!(out, "class: none: a success")?;
            writeln!(out, "class decided by: {}", self.success_text())?;
            return writeln!(
                out,
                "policy {}, attempt {} of {}: nothing to retry",
                self.policy.name(),
                self.attempt,
                self.policy.attempts()
            );
        };
        writeln!(out, "class: {}", failed.class)?;
        writeln!(out, "class decided by: {}", self.class_rule_text())?;
        write!(
            out,
            "policy {}, attempt {} of {}: ",
            self.policy.name(),
            self.attempt,
            self.policy.attempts()
        )?;
        match (failed.decision.step, failed.range) {
            (Step::Retry { wait }, Some((shortest, ideal, longest))) => {
                writeln!(out, "retried")?;
                if self.fixed_draw {
                    writeln!(out, "wait: {} s", format_wait(wait, false))?;
                } else {
                    writeln!(
                        out,
                        "wait: {} s ideal; a random draw gives {} to {} s",
                        format_wait(ideal, false),
                        format_wait(shortest, false),
                        format_wait(longest, false)
                    )?;
                }
            }
            (Step::Stop(reason), _) => writeln!(out, "not retried: {reason}")?,
            _ => writeln!(out, "retried")?,
        }
        writeln!(out, "decided by: {}", self.decision_text(failed))?;
        self.write_upstream(out)?;
        self.write_route(out)
    }

    /// With `--across`, where the next attempt goes.
    fn write_route(&self, out: &mut impl Write) -> std::io::Result<()> {
        let Some(route) = &self.across else {
            return Ok(());
        };
        let from = &route.from;
        match (route.rule, &route.next) {
            ("move", Some(next)) => writeln!(
                out,
                "across upstreams: {from} failed; the next attempt goes to {next} at once, with no wait; the wait above is for when every upstream has failed (rule: move)"
            ),
            ("ladder", _) => writeln!(
                out,
                "across upstreams: {from} is the last; with every upstream failed in this round, the call waits as above, then starts again from {} (rule: ladder)",
                route.first
            ),
            _ => writeln!(
                out,
                "across upstreams: a failure that does not move; the call stays on {from}, decided as above (rule: stays)"
            ),
        }
    }

    /// With `--upstream`, what the response tells the call's upstream.
    fn write_upstream(&self, out: &mut impl Write) -> std::io::Result<()> {
        let Some(effect) = self.upstream else {
            return Ok(());
        };
        match effect {
            UpstreamEffect::Pause(pause) => writeln!(
                out,
                "on an upstream: every call on it waits {} s, first tries included (rule: upstream_pause)",
                format_wait(pause, false)
            ),
            UpstreamEffect::Outage => writeln!(
                out,
                "on an upstream: an outage failure; 3 within 10 s with no success between open its gate, and one call at a time probes (rule: upstream_gate)"
            ),
            UpstreamEffect::Clears => writeln!(
                out,
                "on an upstream: the upstream is up; an open gate closes (rule: upstream_closes)"
            ),
            UpstreamEffect::Nothing => writeln!(out, "on an upstream: nothing it keeps"),
        }
    }

    /// Why a success is one, in words.
    fn success_text(&self) -> String {
        match &self.answer {
            Answer::Http(error) => format!(
                "the status {}: not an error (4xx or 5xx), so the library hands the response back unread",
                error.status().as_u16()
            ),
            Answer::Grpc { code, .. } => format!(
                "the gRPC code {} ({code}): the call succeeded",
                grpc::code_name(*code).unwrap_or("?")
            ),
        }
    }

    fn class_rule_text(&self) -> String {
        let error = match &self.answer {
            Answer::Http(error) => error,
            Answer::Grpc {
                pushback: Some(Pushback::Stop),
                ..
            } => {
                return "grpc-retry-pushback-ms: a negative or malformed value, which A6 says means do not retry".into();
            }
            Answer::Grpc { code, .. } => {
                return format!(
                    "the gRPC code {} ({code}), by the status-code table",
                    grpc::code_name(*code).unwrap_or("?")
                );
            }
        };
        match error.rule() {
            Rule::ShouldRetry => {
                let said = error
                    .headers()
                    .get("x-should-retry")
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or("?");
                format!("x-should-retry: {said}, which outranks the body and the status")
            }
            Rule::Overloaded => {
                "the provider's error type `overloaded_error`, whatever the status".into()
            }
            Rule::QuotaRefused => format!(
                "the provider's error code `{}`: a billing refusal that no wait clears",
                error.error_code().or(error.error_type()).unwrap_or("?")
            ),
            Rule::ContextOverflow => {
                "the body: the prompt does not fit the model's context, an answer to route to your own recovery".into()
            }
            Rule::QuotaSpent => "x-ratelimit-remaining: 0 on a 403: a spent quota".into(),
            Rule::DailyQuota => format!(
                "Google's details name the per-day quota `{}`: it resets at midnight Pacific time, past any ladder",
                error.quota_id().unwrap_or("?")
            ),
            Rule::Status => format!("the status {}", error.status().as_u16()),
            other => other.name().into(),
        }
    }

    /// The rule in words.
    fn decision_text(&self, failed: &Failed) -> String {
        let own = failed
            .decision
            .own_wait
            .map_or_else(|| "?".into(), |own| format_wait(own, false));
        match (failed.decision.rule, failed.decision.step) {
            (Why::Hint, _) => format!(
                "the hint: the server asked for {} s ({}), longer than the policy's own {own} s",
                failed
                    .class
                    .retry_after()
                    .map_or_else(|| "?".into(), |hint| format_wait(hint, false)),
                self.hint_text()
            ),
            (_, Step::Stop(reason)) if self.pushback_stopped(reason) => {
                "the server's pushback: it asked not to be retried".into()
            }
            (Why::MaxHint, _) if failed.class.retry_after() == Some(Duration::MAX) => format!(
                "the maximum hint: the server's {} is too long to count, past the policy's {} s",
                self.hint_text(),
                format_wait(self.policy.max_retry_after(), false)
            ),
            (Why::MaxHint, _) => format!(
                "the maximum hint: the policy honours a Retry-After of at most {} s",
                format_wait(self.policy.max_retry_after(), false)
            ),
            (Why::MaxTotal, _) => format!(
                "the total: the policy waits at most {} s in all, hints included",
                format_wait(self.policy.max_total_wait(), false)
            ),
            (Why::Cap, _) => format!(
                "the cap: rung {} of the ladder is held at {} s",
                self.attempt,
                format_wait(self.policy.cap(), false)
            ),
            (Why::RateLimitOnce, Step::Retry { .. }) => {
                format!("the policy's single rate-limit retry, after {own} s")
            }
            (Why::Declined, Step::Stop(StopReason::Definitive)) => {
                format!("the table: {}", self.class_rule_text())
            }
            (Why::Declined, Step::Stop(StopReason::NotRetried { .. })) => format!(
                "the policy: `{}` does not retry `{}` failures",
                self.policy.name(),
                failed.class.name()
            ),
            (Why::Attempts, _) => format!(
                "the attempts: attempt {} of {} was the last",
                self.attempt,
                self.policy.attempts()
            ),
            (_, Step::Stop(reason)) => reason.to_string(),
            _ => format!("the ladder: rung {} of the policy's waits", self.attempt),
        }
    }
}

impl Explanation {
    /// Where the hint came from, in words.
    fn hint_text(&self) -> &'static str {
        match &self.answer {
            Answer::Grpc { .. } => "grpc-retry-pushback-ms",
            Answer::Http(error) => match error.hint_source() {
                Some(HintSource::RetryAfterMs) => "retry-after-ms",
                Some(HintSource::RetryInfo) => "Google's RetryInfo.retryDelay",
                _ => "Retry-After",
            },
        }
    }
}

fn hint_source_name(source: HintSource) -> &'static str {
    match source {
        HintSource::RetryAfterMs => "retry_after_ms",
        HintSource::RetryInfo => "retry_info",
        _ => "retry_after",
    }
}

fn parse_grpc_code(text: &str) -> Result<i32, String> {
    grpc::parse_code(text).ok_or_else(|| {
        format!("`{text}` is not a gRPC status code; use a name or a number from 0 to 16, like UNAVAILABLE or 14")
    })
}

fn parse_status(text: &str) -> Result<StatusCode, String> {
    text.parse::<u16>()
        .ok()
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or_else(|| {
            format!("`{text}` is not an HTTP status; use a number from 100 to 999, like 503")
        })
}

fn parse_header(text: &str) -> Result<(HeaderName, HeaderValue), String> {
    let bad =
        || format!("`{text}` is not a header; write it as `Name: value`, like `Retry-After: 30`");
    let (name, value) = text.split_once(':').ok_or_else(bad)?;
    let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad())?;
    let value = HeaderValue::from_str(value.trim()).map_err(|_| bad())?;
    Ok((name, value))
}
