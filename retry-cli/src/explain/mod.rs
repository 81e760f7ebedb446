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
use retry_runtime::http::{HintSource, HttpError, Rule, rate_limits};
use retry_runtime::ladder::{self, Decision, Failure, Step, Why};
use retry_runtime::{
    Class, Classify, Draw, Policy, RateSaid, StopReason, Upstream, UpstreamEffect, Upstreams,
};

use crate::error::CliError;
use crate::flags::{DrawArgs, PolicyArgs};
use crate::output::{self, format_wait, json_ms};

mod said;

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
    ///
    /// With rate-limit headers (OpenAI's `x-ratelimit-*`, Anthropic's
    /// `anthropic-ratelimit-*`), on a success or a failure, it also says what the key has left
    /// and how long the next attempt would wait for it, from the upstream's own pacer.
    #[arg(long)]
    upstream: bool,
    /// With `--upstream`, what the next attempt costs in tokens, for a key's token limit.
    #[arg(long, default_value_t = 0, requires = "upstream")]
    tokens: u32,
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
    /// and `next_upstream` (null unless it moves). With `--upstream` and rate-limit headers,
    /// also `requests_remaining`, `tokens_remaining` (null where not said) and `pace_wait_ms`
    /// (what the next attempt waits for the key; null if it costs more than the whole limit).
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
    /// With `--upstream`, what the headers said of the key, and the next attempt's wait for it
    /// (`None`: it costs more than the whole limit).
    paced: Option<(RateSaid, Option<Duration>)>,
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
        let paced = match &answer {
            Answer::Http(error) if self.upstream => {
                rate_limits(error.headers(), std::time::SystemTime::now())
            }
            _ => None,
        }
        .map(|said| {
            // By the library's own pacer, on an upstream that heard only these headers.
            static EXPLAINED: Upstream = Upstream::new("explained");
            EXPLAINED.heard_limits(said);
            let explained = &EXPLAINED;
            // On whole milliseconds, rounded up, as a timer fires (what passed since the
            // headers were heard, microseconds, is not the provider's).
            let whole = |wait: Duration| {
                Duration::from_millis(
                    u64::try_from(wait.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX),
                )
            };
            (said, explained.pace_wait(self.tokens).map(whole))
        });
        Ok(Explanation {
            paced,
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
