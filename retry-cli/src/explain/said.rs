//! What `backoff explain` says: the rule by name, the JSON, and the text, from the
//! explanation the library's own code made.

use std::io::Write;

use super::*;

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

    pub(super) fn json(&self) -> serde_json::Value {
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
        if let Some((said, wait)) = &self.paced {
            json["requests_remaining"] =
                serde_json::json!(said.requests.map(|left| left.remaining));
            json["tokens_remaining"] = serde_json::json!(said.tokens.map(|left| left.remaining));
            json["pace_wait_ms"] = serde_json::json!(wait.map(json_ms));
        }
        if let Some(route) = &self.across {
            json["across_rule"] = serde_json::json!(route.rule);
            json["next_upstream"] = serde_json::json!(route.next);
        }
        json
    }

    pub(super) fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
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
            writeln!(
                out,
                "policy {}, attempt {} of {}: nothing to retry",
                self.policy.name(),
                self.attempt,
                self.policy.attempts()
            )?;
            // A success's headers still tell a paced upstream what the key has left.
            return self.write_paced(out);
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

    /// With `--upstream` and rate-limit headers, what the key has left and the next wait.
    fn write_paced(&self, out: &mut impl Write) -> std::io::Result<()> {
        let Some((said, wait)) = &self.paced else {
            return Ok(());
        };
        let left = |kind: &str, left: Option<retry_runtime::RateLeft>| {
            left.map(|left| match left.limit {
                Some(limit) => format!("{} of {limit} {kind}", left.remaining),
                None => format!("{} {kind}", left.remaining),
            })
        };
        let said: Vec<String> = [left("requests", said.requests), left("tokens", said.tokens)]
            .into_iter()
            .flatten()
            .collect();
        let next = match wait {
            Some(wait) if wait.is_zero() => "the next attempt goes at once".to_owned(),
            Some(wait) => format!(
                "the next attempt waits {} s for it",
                format_wait(*wait, false)
            ),
            None => "the next attempt costs more than the whole limit: it fails at once, an answer"
                .to_owned(),
        };
        writeln!(
            out,
            "on an upstream: the key has {} left; {next} (rule: upstream_pace)",
            said.join(" and ")
        )
    }

    /// With `--upstream`, what the response tells the call's upstream.
    fn write_upstream(&self, out: &mut impl Write) -> std::io::Result<()> {
        self.write_paced(out)?;
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
