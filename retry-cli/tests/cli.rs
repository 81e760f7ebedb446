//! `backoff` as a shell script runs it: the same numbers as the library, retries only on "try
//! again" statuses, and clear errors for bad input. Waits are skipped (`BACKOFF_SKIP_WAITS`),
//! never slept.

use std::process::{Command, Output};
use std::time::Duration;

use retry_runtime::{Draw, Policy, ladder};

fn backoff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_backoff"))
        .args(args)
        .env("BACKOFF_SKIP_WAITS", "1")
        .output()
        .expect("the backoff binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn delay_prints_the_same_wait_as_the_library_for_every_policy_attempt_and_draw() {
    let policies = [
        ("availability", Policy::AVAILABILITY),
        ("outage", Policy::OUTAGE),
        ("transient", Policy::TRANSIENT),
    ];
    for (name, policy) in policies {
        for attempt in 1..=6u32 {
            for draw in ["0", "0.25", "0.5", "0.999"] {
                let output = backoff(&[
                    "delay",
                    "--policy",
                    name,
                    "--attempt",
                    &attempt.to_string(),
                    "--draw",
                    draw,
                    "--ms",
                ]);
                let unit: f64 = draw.parse().unwrap();
                let ideal = ladder::ideal_wait(&policy, attempt);
                let expected = ladder::jittered(ideal, policy.jitter(), Draw::from_unit(unit));
                assert_eq!(
                    stdout(&output).trim(),
                    expected.as_millis().to_string(),
                    "{name} attempt {attempt} draw {draw}"
                );
            }
        }
    }
}

#[test]
fn delay_without_jitter_prints_the_ideal_wait_in_seconds() {
    let output = backoff(&[
        "delay",
        "--policy",
        "transient",
        "--attempt",
        "3",
        "--no-jitter",
    ]);
    assert!(output.status.success());
    assert_eq!(stdout(&output), "4.000\n");
}

#[test]
fn delay_takes_the_attributes_adjustments_as_flags() {
    let output = backoff(&[
        "delay",
        "--attempt",
        "3",
        "--base-ms",
        "100",
        "--multiplier",
        "3",
        "--no-jitter",
        "--ms",
    ]);
    assert_eq!(stdout(&output), "900\n");
}

#[test]
fn a_random_delay_stays_inside_the_jitter_range() {
    for _ in 0..20 {
        let output = backoff(&[
            "delay",
            "--policy",
            "availability",
            "--attempt",
            "2",
            "--ms",
        ]);
        let millis: u64 = stdout(&output).trim().parse().unwrap();
        assert!((250..500).contains(&millis), "{millis}");
    }
}

#[test]
fn sleep_waits_the_delay() {
    let output = backoff(&[
        "sleep",
        "--policy",
        "outage",
        "--attempt",
        "2",
        "--no-jitter",
    ]);
    assert!(output.status.success());
    assert_eq!(stderr(&output), "backoff: would sleep 15.000\n");
}

#[test]
fn schedule_prints_the_ladder_and_its_worst_case() {
    let output = backoff(&["schedule", "--policy", "availability"]);
    let text = stdout(&output);
    assert!(text.contains("1\t0.250\t0.125\t0.250\n"), "{text}");
    assert!(text.contains("2\t0.500\t0.250\t0.500\n"), "{text}");
    assert!(text.contains("3\t1.000\t0.500\t1.000\n"), "{text}");
    assert!(text.ends_with("worst case: 1.750 s of waiting\n"), "{text}");
    assert_eq!(
        Policy::AVAILABILITY.worst_case_wait(),
        Duration::from_millis(1750)
    );
}

#[test]
fn run_retries_a_temporary_failure_and_exits_with_the_last_status() {
    let output = backoff(&["run", "--", "sh", "-c", "exit 75"]);
    assert_eq!(output.status.code(), Some(75));
    let text = stderr(&output);
    assert_eq!(text.matches("retrying (").count(), 3, "{text}");
    assert!(
        text.contains("waits skipped (ms): [250, 500, 1000]"),
        "{text}"
    );
}

#[test]
fn run_succeeds_once_the_command_does() {
    let dir = std::env::temp_dir().join(format!("backoff-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let counter = dir.join("attempts");
    // Fails with 75 twice, then succeeds; counts its runs in a file.
    let script = format!(
        "n=$(cat {0} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {0}; [ $n -ge 3 ] || exit 75",
        counter.display()
    );
    let output = backoff(&["run", "--", "sh", "-c", &script]);
    let runs = std::fs::read_to_string(&counter).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();

    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(runs.trim(), "3");
}

#[test]
fn run_never_retries_any_other_status() {
    let output = backoff(&["run", "--", "sh", "-c", "exit 1"]);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(!text.contains("retrying ("), "{text}");
    assert!(text.contains("gave up after 1 of 4 attempts"), "{text}");
}

#[test]
fn run_retries_the_statuses_it_is_told_to() {
    let output = backoff(&[
        "run",
        "--retry-on",
        "69,75",
        "--attempts",
        "2",
        "--",
        "sh",
        "-c",
        "exit 69",
    ]);
    assert_eq!(output.status.code(), Some(69));
    assert_eq!(stderr(&output).matches("retrying (").count(), 1);
}

#[test]
fn run_gives_up_before_a_wait_that_would_outlive_its_budget() {
    let output = backoff(&[
        "run", "--policy", "outage", "--budget", "30s", "--", "sh", "-c", "exit 75",
    ]);
    assert_eq!(output.status.code(), Some(75));
    let text = stderr(&output);
    assert!(text.contains("waits skipped (ms): [5000, 15000]"), "{text}");
    assert!(text.contains("would outlive the budget"), "{text}");
}

#[test]
fn a_command_that_does_not_exist_exits_127_without_retrying() {
    let output = backoff(&["run", "--", "backoff-no-such-command"]);
    assert_eq!(output.status.code(), Some(127));
    assert!(stderr(&output).contains("could not be started"));
}

#[test]
fn an_unknown_policy_is_refused_with_the_known_ones() {
    let output = backoff(&["delay", "--policy", "outrage", "--attempt", "1"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("[possible values: availability, outage, transient]"),
        "{text}"
    );
}

#[test]
fn a_malformed_budget_is_refused_with_an_example() {
    let output = backoff(&["run", "--budget", "2 minutes", "--", "true"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("like `30s` or `2m`"));
}

#[test]
fn a_cap_below_the_base_is_refused_naming_the_flags() {
    let output = backoff(&[
        "delay",
        "--attempt",
        "1",
        "--base-ms",
        "500",
        "--cap-ms",
        "100",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--cap-ms"));
}

#[test]
fn run_without_a_command_is_refused() {
    let output = backoff(&["run"]);
    assert_eq!(output.status.code(), Some(2));
}

// ---------------------------------------------------------------------------------------------
// explain: the library's one HTTP table, checked against `retry_runtime::http` in the same test.

use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use retry_runtime::http::HttpError;
use retry_runtime::ladder::{Decision, Failure, Step};
use retry_runtime::{Classify, Clock, Retry, StopReason};
use serde_json::Value;

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}{}", stdout(output), stderr(output)))
}

/// One row of the table: a status, its headers and its body.
struct Response {
    status: u16,
    headers: &'static [(&'static str, &'static str)],
    body: &'static str,
}

/// Every row of `retry_runtime::http`'s table, in its order, and the statuses it names.
const TABLE: &[Response] = &[
    Response {
        status: 400,
        headers: &[("x-should-retry", "true")],
        body: "",
    },
    Response {
        status: 503,
        headers: &[("x-should-retry", "false")],
        body: "",
    },
    Response {
        status: 500,
        headers: &[],
        body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    },
    Response {
        status: 529,
        headers: &[("retry-after", "7")],
        body: r#"{"type":"error","error":{"type":"overloaded_error"}}"#,
    },
    Response {
        status: 429,
        headers: &[],
        body: r#"{"error":{"type":"insufficient_quota","message":"You exceeded your current quota"}}"#,
    },
    Response {
        status: 403,
        headers: &[],
        body: r#"{"error":{"code":"billing_hard_limit_reached"}}"#,
    },
    Response {
        status: 400,
        headers: &[],
        body: r#"{"error":{"code":"billing_not_active"}}"#,
    },
    Response {
        status: 400,
        headers: &[],
        body: r#"{"error":{"code":"context_length_exceeded","message":"maximum context length"}}"#,
    },
    Response {
        status: 413,
        headers: &[],
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200001 tokens"}}"#,
    },
    Response {
        status: 502,
        headers: &[],
        body: "",
    },
    Response {
        status: 503,
        headers: &[("retry-after", "3")],
        body: "",
    },
    Response {
        status: 504,
        headers: &[],
        body: "",
    },
    Response {
        status: 529,
        headers: &[],
        body: "",
    },
    Response {
        status: 429,
        headers: &[("retry-after", "30")],
        body: "",
    },
    Response {
        status: 429,
        headers: &[("retry-after-ms", "1500")],
        body: "",
    },
    Response {
        status: 429,
        headers: &[("retry-after", "0")],
        body: "",
    },
    Response {
        status: 429,
        headers: &[("retry-after", "600")],
        body: "",
    },
    Response {
        status: 403,
        headers: &[("x-ratelimit-remaining", "0")],
        body: "",
    },
    Response {
        status: 408,
        headers: &[],
        body: "",
    },
    Response {
        status: 500,
        headers: &[],
        body: "",
    },
    Response {
        status: 507,
        headers: &[],
        body: "",
    },
    Response {
        status: 501,
        headers: &[],
        body: "",
    },
    Response {
        status: 505,
        headers: &[],
        body: "",
    },
    Response {
        status: 400,
        headers: &[],
        body: r#"{"error":{"type":"invalid_request_error"}}"#,
    },
    Response {
        status: 401,
        headers: &[],
        body: "",
    },
    Response {
        status: 403,
        headers: &[],
        body: "",
    },
    Response {
        status: 404,
        headers: &[],
        body: "",
    },
    Response {
        status: 409,
        headers: &[],
        body: "",
    },
    Response {
        status: 413,
        headers: &[],
        body: "",
    },
    Response {
        status: 422,
        headers: &[],
        body: "",
    },
];

/// The library's own reading of `response`.
fn library_error(response: &Response) -> HttpError {
    let mut headers = HeaderMap::new();
    for (name, value) in response.headers {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    let status = StatusCode::from_u16(response.status).unwrap();
    HttpError::new(status, &headers, response.body.as_bytes())
}

/// `backoff explain --json` on `response`, its body in `body_file`, under the policy `name`.
fn explain_json(response: &Response, body_file: &Path, name: &str, attempt: u32) -> Value {
    let mut args = vec![
        "explain".to_owned(),
        "--status".to_owned(),
        response.status.to_string(),
        "--body".to_owned(),
        body_file.display().to_string(),
        "--policy".to_owned(),
        name.to_owned(),
        "--attempt".to_owned(),
        attempt.to_string(),
        "--json".to_owned(),
    ];
    for (header, value) in response.headers {
        args.push("--header".to_owned());
        args.push(format!("{header}: {value}"));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = backoff(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    json(&output)
}

/// The class fields `explain` printed are the table's.
fn assert_class_fields(got: &Value, expected: &HttpError, response: &Response, context: &str) {
    let class = expected.classify();
    assert_eq!(got["status"], response.status, "{context}");
    assert_eq!(got["class"], class.name(), "{context}");
    assert_eq!(got["class_rule"], expected.rule().name(), "{context}");
    assert_eq!(
        got["retry_after_ms"].as_u64(),
        class.retry_after().map(|hint| hint.as_millis() as u64),
        "{context}"
    );
    assert_eq!(
        got["error_type"].as_str(),
        expected.error_type(),
        "{context}"
    );
    assert_eq!(
        got["error_code"].as_str(),
        expected.error_code(),
        "{context}"
    );
    assert_eq!(
        got["context_overflow"],
        expected.is_context_overflow(),
        "{context}"
    );
}

/// The decision fields `explain` printed are the ladder's `decided`.
fn assert_decision_fields(got: &Value, expected: &HttpError, decided: Decision, context: &str) {
    // The CLI prints the engine's own rule: for an answer, the table's row.
    let rule = match decided.step.stop_reason() {
        Some(StopReason::Definitive) => expected.rule().name(),
        _ => decided.rule.name(),
    };
    assert_eq!(got["rule"], rule, "{context}");
    match decided.step {
        Step::Retry { wait } => {
            assert_eq!(got["retried"], true, "{context}");
            assert_eq!(got["wait_ideal_ms"], wait.as_millis() as u64, "{context}");
            assert_eq!(got["stop_reason"], Value::Null, "{context}");
        }
        step => {
            let reason = step.stop_reason().expect("a stop");
            assert_eq!(got["retried"], false, "{context}");
            assert_eq!(got["stop_reason"], reason.name(), "{context}");
            assert_eq!(got["wait_ms"], Value::Null, "{context}");
            if reason == StopReason::Definitive {
                assert_eq!(got["rule"], expected.rule().name(), "{context}");
            }
        }
    }
}

#[test]
fn explain_gives_the_librarys_class_rule_and_wait_for_every_row_of_the_http_table() {
    let dir = tempfile::tempdir().unwrap();
    let policies = [
        ("availability", Policy::AVAILABILITY),
        ("outage", Policy::OUTAGE),
        ("transient", Policy::TRANSIENT),
    ];
    for (row, response) in TABLE.iter().enumerate() {
        let body_file = dir.path().join(format!("body-{row}"));
        std::fs::write(&body_file, response.body).unwrap();
        let expected = library_error(response);
        for (name, policy) in policies {
            for attempt in [1u32, 2, 4] {
                let got = explain_json(response, &body_file, name, attempt);
                let context = format!(
                    "row {row} ({}) {name} attempt {attempt}: {got}",
                    response.status
                );
                assert_class_fields(&got, &expected, response, &context);
                let failure = Failure::new(attempt, expected.classify());
                let decided = ladder::decide(&policy, failure).with_draw(Draw::IDEAL);
                assert_decision_fields(&got, &expected, decided, &context);
            }
        }
    }
}

/// A clock that never sleeps: it draws the ideal and keeps the waits asked for.
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Vec<Duration>>>);

impl Clock for Recording {
    type Sleep = std::future::Ready<()>;

    fn now(&self) -> tokio::time::Instant {
        tokio::time::Instant::now()
    }
    fn sleep(&self, wait: Duration) -> Self::Sleep {
        self.0.lock().unwrap().push(wait);
        std::future::ready(())
    }
    fn draw(&self) -> Draw {
        Draw::IDEAL
    }
}

/// What the engine did with `error` as a call's first failure: the wait before its retry, or
/// why it stopped.
fn engine_first_step(policy: &Policy, error: &HttpError) -> Result<Duration, StopReason> {
    let clock = Recording::default();
    let call = Retry::new(policy)
        .with_clock(clock.clone())
        .run(async |attempt| {
            if attempt == 1 {
                Err(error.clone())
            } else {
                Ok(())
            }
        });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    match runtime.block_on(call) {
        Ok(()) => Ok(clock.0.lock().unwrap()[0]),
        Err(gave_up) => Err(gave_up.reason()),
    }
}

#[test]
fn explain_and_the_engine_agree_on_the_first_failure_of_every_row_of_the_http_table() {
    let dir = tempfile::tempdir().unwrap();
    for (row, response) in TABLE.iter().enumerate() {
        let body_file = dir.path().join(format!("body-{row}"));
        std::fs::write(&body_file, response.body).unwrap();
        let error = library_error(response);
        for (name, policy) in [
            ("availability", Policy::AVAILABILITY),
            ("outage", Policy::OUTAGE),
            ("transient", Policy::TRANSIENT),
        ] {
            let got = explain_json(response, &body_file, name, 1);
            let context = format!("row {row} ({}) {name}: {got}", response.status);
            match engine_first_step(&policy, &error) {
                Ok(wait) => {
                    assert_eq!(got["retried"], true, "{context}");
                    assert_eq!(got["wait_ideal_ms"], wait.as_millis() as u64, "{context}");
                }
                Err(reason) => {
                    assert_eq!(got["retried"], false, "{context}");
                    assert_eq!(got["stop_reason"], reason.name(), "{context}");
                }
            }
        }
    }
}

#[test]
fn explain_names_the_rule_that_decided() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "--status",
                "429",
                "--header",
                "Retry-After: 30",
                "--policy",
                "transient",
            ],
            "hint",
        ),
        (
            &["--status", "429", "--header", "Retry-After: 30"],
            "max_total",
        ),
        (
            &["--status", "503", "--header", "Retry-After: 600"],
            "max_hint",
        ),
        (&["--status", "503"], "ladder"),
        (
            &[
                "--status",
                "503",
                "--policy",
                "transient",
                "--attempt",
                "4",
                "--cap-ms",
                "5000",
            ],
            "cap",
        ),
        (
            &["--status", "429", "--policy", "outage"],
            "rate_limit_once",
        ),
        (
            &["--status", "503", "--header", "x-should-retry: false"],
            "x_should_retry",
        ),
        (&["--status", "500"], "policy"),
        (&["--status", "503", "--attempt", "4"], "attempts"),
        (&["--status", "404"], "status"),
    ];
    for (args, rule) in cases {
        let mut args = args.to_vec();
        args.insert(0, "explain");
        args.push("--json");
        let got = json(&backoff(&args));
        assert_eq!(got["rule"], *rule, "{args:?}: {got}");
    }
}

#[test]
fn explain_in_words_says_the_class_the_wait_and_why() {
    let output = backoff(&[
        "explain",
        "--status",
        "429",
        "--header",
        "Retry-After: 30",
        "--policy",
        "transient",
    ]);
    assert!(output.status.success());
    assert_eq!(
        stdout(&output),
        "response: HTTP 429 Too Many Requests\n\
         class: rate_limited (retry after 30000 ms)\n\
         class decided by: the status 429\n\
         policy transient, attempt 1 of 5: retried\n\
         wait: 30.000 s ideal; a random draw gives 30.000 to 30.999 s\n\
         decided by: the hint: the server asked for 30.000 s (Retry-After), longer than the policy's own 1.000 s\n"
    );
    let drawn = backoff(&["explain", "--status", "503", "--draw", "0.5"]);
    assert!(
        stdout(&drawn).contains("wait: 0.187 s\n"),
        "{}",
        stdout(&drawn)
    );
}

#[test]
fn explain_reads_the_body_from_stdin() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_backoff"))
        .args(["explain", "--status", "400", "--body", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"error":{"code":"context_length_exceeded"}}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let got = json(&output);
    assert_eq!(got["context_overflow"], true);
    assert_eq!(got["class_rule"], "provider_context_overflow");
}

#[test]
fn explain_refuses_a_bad_status_header_or_body_saying_what_to_type() {
    let cases: &[(&[&str], &str)] = &[
        (&["--status", "99"], "like 503"),
        (&["--status", "-1"], "like 503"),
        (
            &["--status", "429", "--header", "Retry-After 30"],
            "like `Retry-After: 30`",
        ),
        (
            &["--status", "429", "--body", "/no/such/backoff-body"],
            "or `-` for stdin",
        ),
    ];
    for (args, advice) in cases {
        let mut args = args.to_vec();
        args.insert(0, "explain");
        let output = backoff(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&output).contains(advice),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// JSON: parses, with stable fields, each named in `--help`.

fn keys(object: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = object
        .as_object()
        .expect("a JSON object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

fn assert_documented(subcommand: &str, fields: &[&str]) {
    let help = stdout(&backoff(&[subcommand, "--help"]));
    for field in fields {
        assert!(
            help.contains(&format!("`{field}`")),
            "{subcommand} --help does not name `{field}`:\n{help}"
        );
    }
}

#[test]
fn schedule_json_has_stable_fields_the_librarys_numbers_and_documents_them() {
    let got = json(&backoff(&["schedule", "--policy", "transient", "--json"]));
    let fields = [
        "attempts",
        "jitter",
        "max_retry_after_ms",
        "policy",
        "rate_limit_once_ms",
        "retried",
        "rows",
        "worst_case_ms",
    ];
    assert_eq!(keys(&got), fields);
    assert_eq!(got["policy"], "transient");
    assert_eq!(
        got["worst_case_ms"],
        Policy::TRANSIENT.worst_case_wait().as_millis() as u64
    );
    let rows = got["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for (index, row) in rows.iter().enumerate() {
        let retry = index as u32 + 1;
        assert_eq!(keys(row), ["from_ms", "ideal_ms", "retry", "up_to_ms"]);
        assert_eq!(row["retry"], retry);
        assert_eq!(
            row["ideal_ms"],
            ladder::ideal_wait(&Policy::TRANSIENT, retry).as_millis() as u64
        );
        assert_eq!(
            row["up_to_ms"],
            ladder::max_wait(&Policy::TRANSIENT, retry).as_millis() as u64
        );
    }
    assert_documented("schedule", &fields);
    assert_documented("schedule", &["retry", "ideal_ms", "from_ms", "up_to_ms"]);

    let outage = json(&backoff(&["schedule", "--policy", "outage", "--json"]));
    assert_eq!(outage["rate_limit_once_ms"], 20_000);
}

#[test]
fn delay_json_has_stable_fields_and_documents_them() {
    let got = json(&backoff(&[
        "delay",
        "--policy",
        "transient",
        "--attempt",
        "3",
        "--draw",
        "0.5",
        "--json",
    ]));
    let fields = [
        "attempt", "from_ms", "ideal_ms", "policy", "up_to_ms", "wait_ms",
    ];
    assert_eq!(keys(&got), fields);
    let ideal = ladder::ideal_wait(&Policy::TRANSIENT, 3);
    let expected = ladder::jittered(ideal, Policy::TRANSIENT.jitter(), Draw::from_unit(0.5));
    assert_eq!(got["wait_ms"], expected.as_millis() as u64);
    assert_eq!(got["ideal_ms"], 4000);
    assert_eq!(got["from_ms"], 2000);
    assert_eq!(got["up_to_ms"], 6000);
    assert_documented("delay", &fields);
}

#[test]
fn explain_json_has_stable_fields_and_documents_them() {
    let fields = [
        "attempt",
        "attempts",
        "class",
        "class_rule",
        "context_overflow",
        "error_code",
        "error_type",
        "grpc_code",
        "hint_source",
        "policy",
        "quota_id",
        "retried",
        "retry_after_ms",
        "rule",
        "status",
        "stop_reason",
        "wait_ideal_ms",
        "wait_longest_ms",
        "wait_ms",
        "wait_shortest_ms",
    ];
    for status in ["503", "404"] {
        let got = json(&backoff(&["explain", "--status", status, "--json"]));
        assert_eq!(keys(&got), fields, "{status}");
    }
    assert_documented("explain", &fields);
}

// ---------------------------------------------------------------------------------------------
// Output: a closed pipe ends quietly with 0; a full disk is one line and 74; nothing panics.

#[test]
fn a_closed_pipe_ends_quietly_with_status_0() {
    for args in [
        &["schedule", "--policy", "outage", "--attempts", "1000"][..],
        &["schedule", "--attempts", "1000", "--json"],
        &["delay", "--attempt", "1"],
        &["explain", "--status", "503"],
        &["explain", "--help"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_backoff"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end before backoff writes: every write it makes fails with EPIPE.
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(stderr(&output), "", "{args:?}");
    }
}

#[test]
fn schedule_piped_into_head_passes_under_pipefail() {
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        return; // No bash: the closed-pipe test above covers the same path.
    }
    let output = Command::new("bash")
        .arg("-c")
        .arg(r#"set -o pipefail; "$BACKOFF" schedule --policy outage --attempts 1000 | head -1"#)
        .env("BACKOFF", env!("CARGO_BIN_EXE_backoff"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).lines().count(), 1);
    assert_eq!(stderr(&output), "");
}

#[test]
fn a_full_disk_is_one_line_and_status_74() {
    if !Path::new("/dev/full").exists() {
        return; // Not Linux: there is no device that is always full.
    }
    for args in [
        &["schedule", "--policy", "outage"][..],
        &["schedule", "--json"],
        &["delay", "--attempt", "1", "--json"],
        &["explain", "--status", "429"],
        &["schedule", "--help"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_backoff"))
            .args(args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(74), "{args:?}");
        let text = stderr(&output);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.starts_with("backoff: cannot write the output: "),
            "{text}"
        );
        assert!(!text.contains("panicked"), "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// schedule streams, up to a documented maximum of attempts.

#[test]
fn schedule_prints_every_row_up_to_the_maximum_attempts_from_the_library() {
    let policy = Policy::TRANSIENT.with_multiplier(1.5).with_attempts(1000);
    let output = backoff(&[
        "schedule",
        "--policy",
        "transient",
        "--multiplier",
        "1.5",
        "--attempts",
        "1000",
        "--json",
    ]);
    let got = json(&output);
    let rows = got["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 999);
    for retry in [1u32, 2, 7, 500, 999] {
        let row = &rows[retry as usize - 1];
        assert_eq!(
            row["ideal_ms"],
            ladder::ideal_wait(&policy, retry).as_millis() as u64
        );
    }
}

#[test]
fn attempts_above_the_maximum_are_refused_naming_it() {
    for attempts in ["1001", "4294967295", "99999999999999999999"] {
        let output = backoff(&["schedule", "--attempts", attempts]);
        assert_eq!(output.status.code(), Some(2), "{attempts}");
        let text = stderr(&output);
        assert!(text.contains("at most 1000"), "{text}");
        assert!(text.contains("--budget"), "{text}");
    }
    let help = stdout(&backoff(&["schedule", "--help"]));
    assert!(help.contains("at most 1000"), "{help}");
}

// ---------------------------------------------------------------------------------------------
// Small messages: each says what is wrong and what to type instead.

#[test]
fn a_budget_too_large_is_called_too_large_not_malformed() {
    let output = backoff(&["run", "--budget", "99999999999h", "--", "true"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("is too large for a budget"), "{text}");
    assert!(text.contains("like `168h`"), "{text}");
    assert!(!text.contains("malformed"), "{text}");
}

#[test]
fn a_negative_draw_gets_our_message_not_an_unexpected_argument() {
    let output = backoff(&["delay", "--attempt", "1", "--draw", "-0.1"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("`-0.1` is not a draw in [0, 1); use one like 0.5"),
        "{text}"
    );
    assert!(!text.contains("unexpected argument"), "{text}");
}

#[test]
fn negative_numbers_reach_their_parsers_for_every_numeric_flag() {
    for args in [
        &["delay", "--attempt", "-1"][..],
        &["delay", "--attempt", "1", "--multiplier", "-2"],
        &["delay", "--attempt", "1", "--attempts", "-3"],
        &["delay", "--attempt", "1", "--base-ms", "-5"],
    ] {
        let output = backoff(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            !stderr(&output).contains("unexpected argument"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// run: signals, secrets, and the git example.

#[test]
fn a_command_killed_by_a_signal_is_never_retried_even_if_its_status_is_listed() {
    let output = backoff(&["run", "--retry-on", "137", "--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(output.status.code(), Some(137));
    let text = stderr(&output);
    assert!(!text.contains("retrying ("), "{text}");
    assert!(
        text.contains("was killed by signal 9 (SIGKILL), which is never retried"),
        "{text}"
    );
    // A command that exits 137 itself (as a shell does for its killed child) is retried.
    let exited = backoff(&[
        "run",
        "--retry-on",
        "137",
        "--attempts",
        "2",
        "--",
        "sh",
        "-c",
        "exit 137",
    ]);
    assert_eq!(exited.status.code(), Some(137));
    assert_eq!(stderr(&exited).matches("retrying (").count(), 1);
}

#[test]
fn run_never_prints_the_commands_arguments() {
    const SECRET: &str = "SECRET_TOKEN_VALUE";
    let cases: &[&[&str]] = &[
        // Retried and given up on: the secret is $0 of the script, which prints nothing.
        &["run", "--", "sh", "-c", "exit 75", SECRET],
        &["run", "--retry-on", "3", "--", "sh", "-c", "exit 3", SECRET],
        &["run", "--", "sh", "-c", "exit 1", SECRET],
        &[
            "run",
            "--retry-on",
            "75",
            "--retry-if-stderr",
            "x",
            "--",
            "sh",
            "-c",
            "exit 75",
            SECRET,
        ],
        &["run", "--", "sh", "-c", "kill -9 $$", SECRET],
        &["run", "--", "backoff-no-such-command", SECRET],
    ];
    for args in cases {
        let output = backoff(args);
        let text = stderr(&output);
        assert!(text.contains("backoff: "), "{args:?}: {text}");
        assert!(!text.contains(SECRET), "{args:?}: {text}");
        assert!(!stdout(&output).contains(SECRET), "{args:?}");
    }
}

#[test]
fn retry_if_stderr_retries_a_listed_status_only_when_a_line_matches() {
    let matched = backoff(&[
        "run",
        "--retry-on",
        "128",
        "--retry-if-stderr",
        "^fatal: .*timed out$",
        "--",
        "sh",
        "-c",
        "echo 'fatal: connection timed out' >&2; exit 128",
    ]);
    assert_eq!(matched.status.code(), Some(128));
    let text = stderr(&matched);
    assert_eq!(text.matches("retrying (").count(), 3, "{text}");
    // The command's stderr passes through, once per attempt.
    assert_eq!(
        text.matches("fatal: connection timed out\n").count(),
        4,
        "{text}"
    );

    let unmatched = backoff(&[
        "run",
        "--retry-on",
        "128",
        "--retry-if-stderr",
        "timed out",
        "--",
        "sh",
        "-c",
        "echo 'fatal: Authentication failed' >&2; exit 128",
    ]);
    assert_eq!(unmatched.status.code(), Some(128));
    let text = stderr(&unmatched);
    assert!(!text.contains("retrying ("), "{text}");
    assert!(
        text.contains("but its stderr did not match --retry-if-stderr"),
        "{text}"
    );
}

#[test]
fn a_bad_stderr_pattern_is_refused_with_an_example() {
    let output = backoff(&["run", "--retry-if-stderr", "(unclosed", "--", "true"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("like `Could not resolve host"),
        "{}",
        stderr(&output)
    );
}

/// The guide's `git push` example (its CLI chapter, once the README's), exactly as written
/// there (with its continuation lines).
fn readme_git_example() -> String {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../retry-runtime/src/guide/cli.md"
    ))
    .unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    for (start, line) in lines.iter().enumerate() {
        if !line.starts_with("backoff run") {
            continue;
        }
        let mut command = String::new();
        for line in &lines[start..] {
            command.push_str(line);
            command.push('\n');
            if !line.trim_end().ends_with('\\') {
                break;
            }
        }
        if command.contains("git push") {
            return command;
        }
    }
    panic!("the guide's CLI chapter has no `backoff run ... git push` example");
}

/// Run the guide's example with a fake `git` first on PATH that fails `failures` times with
/// `status` and `message` on stderr, then succeeds. Returns backoff's status, its stderr and how
/// many times git ran.
fn push_with_fake_git(status: u8, message: &str, failures: u32) -> (Option<i32>, String, u32) {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let git = dir.path().join("git");
    std::fs::write(
        &git,
        format!(
            "#!/bin/sh\n\
             n=$(cat '{runs}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{runs}'\n\
             [ \"$1\" = push ] || exit 99\n\
             if [ $n -le {failures} ]; then printf '%s\\n' \"{message}\" >&2; exit {status}; fi\n\
             echo 'To https://example.invalid/repo.git'\n",
            runs = runs.display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_backoff")).parent().unwrap();
    let path = format!(
        "{}:{}:{}",
        dir.path().display(),
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .arg("-c")
        .arg(readme_git_example())
        .env("PATH", path)
        .env("BACKOFF_SKIP_WAITS", "1")
        .output()
        .unwrap();
    let mut ran = String::new();
    std::fs::File::open(&runs)
        .unwrap()
        .read_to_string(&mut ran)
        .unwrap();
    (
        output.status.code(),
        stderr(&output),
        ran.trim().parse().unwrap(),
    )
}

#[test]
fn the_readme_git_example_retries_a_network_failure() {
    let network = "fatal: unable to access 'https://example.invalid/repo.git/': Could not resolve host: example.invalid";
    let (status, text, runs) = push_with_fake_git(128, network, 2);
    assert_eq!(status, Some(0), "{text}");
    assert_eq!(runs, 3, "{text}");
    assert_eq!(text.matches("retrying (").count(), 2, "{text}");

    let refused = "fatal: unable to access 'https://example.invalid/repo.git/': Failed to connect to example.invalid port 443: Connection refused";
    let (status, text, runs) = push_with_fake_git(128, refused, 1);
    assert_eq!((status, runs), (Some(0), 2), "{text}");
}

#[test]
fn the_readme_git_example_does_not_retry_a_failed_login() {
    let login = "fatal: Authentication failed for 'https://example.invalid/repo.git/'";
    let (status, text, runs) = push_with_fake_git(128, login, 1);
    assert_eq!(status, Some(128), "{text}");
    assert_eq!(runs, 1, "{text}");
    assert!(!text.contains("retrying ("), "{text}");

    let forbidden = "fatal: unable to access 'https://example.invalid/repo.git/': The requested URL returned error: 403";
    let (status, _, runs) = push_with_fake_git(128, forbidden, 1);
    assert_eq!((status, runs), (Some(128), 1));
}

#[test]
fn the_readme_git_example_does_not_retry_a_rejected_push() {
    let rejected = " ! [rejected]        main -> main (fetch first)";
    let (status, text, runs) = push_with_fake_git(1, rejected, 1);
    assert_eq!(status, Some(1), "{text}");
    assert_eq!(runs, 1, "{text}");
    assert!(!text.contains("retrying ("), "{text}");
}

#[test]
fn the_cli_leaks_no_configuration() {
    // Every source file, in `src/` and in its module folders (`src/lint/`).
    let mut folders = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(!text.contains("Box::leak"), "{} leaks", path.display());
        }
    }
}

// explain: a Gemini body and a gRPC status code, read by the same tables as the library.

fn explain_json_args(args: &[&str]) -> Value {
    let output = backoff(args);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).expect("explain --json prints one JSON object")
}

const GEMINI_PER_DAY: &str = r#"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
  "details": [
    {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
      {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},
    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "36s"}]}}"#;

#[test]
fn explain_reads_a_gemini_per_day_quota_as_quota_exhausted_by_its_rule() {
    let body = std::env::temp_dir().join(format!("backoff-gemini-{}.json", std::process::id()));
    std::fs::write(&body, GEMINI_PER_DAY).unwrap();
    let got = explain_json_args(&[
        "explain",
        "--status",
        "429",
        "--body",
        body.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(got["class"], "quota_exhausted");
    assert_eq!(got["class_rule"], "google_daily_quota");
    assert_eq!(
        got["quota_id"],
        "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
    );
    assert_eq!(got["retried"], false);
}

#[test]
fn explain_reads_a_gemini_per_minute_retry_delay_as_the_hint() {
    let body =
        std::env::temp_dir().join(format!("backoff-gemini-minute-{}.json", std::process::id()));
    std::fs::write(
        &body,
        GEMINI_PER_DAY
            .replace("PerDay", "PerMinute")
            .replace("36s", "2s"),
    )
    .unwrap();
    let got = explain_json_args(&[
        "explain",
        "--status",
        "429",
        "--body",
        body.to_str().unwrap(),
        "--no-jitter",
        "--json",
    ]);
    assert_eq!(got["class"], "rate_limited");
    assert_eq!(got["hint_source"], "retry_info");
    assert_eq!(got["rule"], "hint");
    assert_eq!(got["wait_ms"], 2000);
}

#[test]
fn explain_takes_a_grpc_code_and_its_pushback() {
    let got = explain_json_args(&[
        "explain",
        "--grpc",
        "UNAVAILABLE",
        "--header",
        "grpc-retry-pushback-ms: 1500",
        "--no-jitter",
        "--json",
    ]);
    assert_eq!(got["grpc_code"], "UNAVAILABLE");
    assert_eq!(got["class"], "unavailable");
    assert_eq!(got["wait_ms"], 1500);
    let stopped = explain_json_args(&[
        "explain",
        "--grpc",
        "14",
        "--header",
        "grpc-retry-pushback-ms: -1",
        "--json",
    ]);
    assert_eq!(stopped["retried"], false);
    assert_eq!(stopped["class_rule"], "grpc_retry_pushback_ms");
    let aborted = explain_json_args(&["explain", "--grpc", "aborted", "--json"]);
    assert_eq!(
        (aborted["class"].as_str(), aborted["rule"].as_str()),
        (Some("definitive"), Some("grpc_code"))
    );
}

#[test]
fn explain_refuses_an_unknown_grpc_code_and_says_what_to_give() {
    let output = backoff(&["explain", "--grpc", "busy"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("a name or a number from 0 to 16"),
        "{}",
        stderr(&output)
    );
}

// explain: what is not a wait is never printed as one, and a success is not a failure.

/// The number a `Duration::MAX` hint ("do not retry") printed as, before it was read as such.
const SENTINEL: &str = "18446744073709551615";

#[test]
fn explain_json_never_prints_a_sentinel_for_do_not_retry_pushback() {
    for code in ["UNAVAILABLE", "RESOURCE_EXHAUSTED", "INTERNAL"] {
        for pushback in ["-1", "soon"] {
            let header = format!("grpc-retry-pushback-ms: {pushback}");
            let args = ["explain", "--grpc", code, "--header", header.as_str()];
            let output = backoff(&[&args[..], &["--json"]].concat());
            assert!(output.status.success(), "{args:?}: {}", stderr(&output));
            assert!(!stdout(&output).contains(SENTINEL), "{}", stdout(&output));
            let got = json(&output);
            let context = format!("{args:?}: {got}");
            assert_eq!(got["retry_after_ms"], Value::Null, "{context}");
            assert_eq!(got["retried"], false, "{context}");
            assert_eq!(got["class_rule"], "grpc_retry_pushback_ms", "{context}");
            // The stop has a rule of its own: not `max_hint`, a hint the policy will not wait.
            assert_eq!(got["rule"], "grpc_retry_pushback_ms", "{context}");
            assert_eq!(got["stop_reason"], "retry_after_too_long", "{context}");

            let text = stdout(&backoff(&args));
            assert!(!text.contains(SENTINEL), "{args:?}: {text}");
            assert!(
                text.contains("decided by: the server's pushback: it asked not to be retried"),
                "{args:?}: {text}"
            );
        }
    }
}

#[test]
fn explain_json_prints_no_hint_too_long_for_a_json_number() {
    let cases: &[&[&str]] = &[
        &[
            "--status",
            "429",
            "--header",
            "Retry-After: 99999999999999999999999",
        ],
        &[
            "--grpc",
            "UNAVAILABLE",
            "--header",
            "grpc-retry-pushback-ms: 99999999999999999999",
        ],
    ];
    for args in cases {
        let args = [&["explain"][..], *args].concat();
        let output = backoff(&[&args[..], &["--json"]].concat());
        assert!(!stdout(&output).contains(SENTINEL), "{}", stdout(&output));
        let got = json(&output);
        assert_eq!(got["retry_after_ms"], Value::Null, "{args:?}: {got}");
        assert_eq!(got["rule"], "max_hint", "{args:?}: {got}");
        assert_eq!(
            got["stop_reason"], "retry_after_too_long",
            "{args:?}: {got}"
        );
    }
    // An HTTP hint past any clock is a Retry-After, not a gRPC pushback.
    let text = stdout(&backoff(&[
        "explain",
        "--status",
        "429",
        "--header",
        "Retry-After: 99999999999999999999999",
    ]));
    assert!(!text.contains("pushback"), "{text}");
    assert!(text.contains("Retry-After"), "{text}");
    // A hint a JSON number holds is printed as it is.
    let got = json(&backoff(&[
        "explain",
        "--status",
        "503",
        "--header",
        "Retry-After: 600",
        "--json",
    ]));
    assert_eq!(got["retry_after_ms"], 600_000);
}

#[test]
fn explain_says_a_2xx_is_a_success() {
    let failure_keys = keys(&json(&backoff(&["explain", "--status", "503", "--json"])))
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    for status in ["200", "204", "299"] {
        // Whatever the headers and the body say: the library never reads a success's.
        let args = [
            "explain",
            "--status",
            status,
            "--header",
            "Retry-After: 30",
            "--header",
            "x-should-retry: true",
        ];
        let output = backoff(&[&args[..], &["--json"]].concat());
        assert!(output.status.success(), "{status}: {}", stderr(&output));
        let got = json(&output);
        assert_eq!(
            keys(&got),
            failure_keys,
            "{status}: the same fields as a failure"
        );
        let context = format!("{status}: {got}");
        assert_eq!(got["status"], status.parse::<u16>().unwrap(), "{context}");
        assert_eq!(got["class"], Value::Null, "{context}");
        assert_eq!(got["class_rule"], "status", "{context}");
        assert_eq!(got["rule"], "status", "{context}");
        assert_eq!(got["retried"], false, "{context}");
        assert_eq!(got["stop_reason"], Value::Null, "{context}");
        assert_eq!(got["retry_after_ms"], Value::Null, "{context}");
        assert_eq!(got["hint_source"], Value::Null, "{context}");
        assert_eq!(got["wait_ms"], Value::Null, "{context}");

        let text = stdout(&backoff(&args));
        assert!(text.contains("class: none: a success"), "{status}: {text}");
        assert!(text.contains("nothing to retry"), "{status}: {text}");
        assert!(!text.contains("failure"), "{status}: {text}");
        assert!(!text.contains("definitive"), "{status}: {text}");
    }
    // The library hands back any response that is not a 4xx or a 5xx unread: so does explain.
    let redirect = json(&backoff(&["explain", "--status", "304", "--json"]));
    assert_eq!(redirect["class"], Value::Null, "{redirect}");
    // The help says what a success prints.
    let help = stdout(&backoff(&["explain", "--help"]));
    assert!(help.contains("null for a success"), "{help}");
}

#[test]
fn explain_says_grpc_ok_is_a_success() {
    let got = explain_json_args(&["explain", "--grpc", "OK", "--json"]);
    assert_eq!(got["grpc_code"], "OK", "{got}");
    assert_eq!(got["class"], Value::Null, "{got}");
    assert_eq!(got["class_rule"], "grpc_code", "{got}");
    assert_eq!(got["rule"], "grpc_code", "{got}");
    assert_eq!(got["retried"], false, "{got}");
    assert_eq!(got["stop_reason"], Value::Null, "{got}");
    let text = stdout(&backoff(&["explain", "--grpc", "0"]));
    assert!(text.contains("class: none: a success"), "{text}");
    assert!(text.contains("nothing to retry"), "{text}");
    assert!(!text.contains("failure"), "{text}");
}

/// `--upstream`: what the response tells an upstream, the same as the library's own rule.
#[test]
fn explain_on_an_upstream_names_the_pause_the_gate_or_its_closing() {
    use retry_runtime::{Class, Policy, Upstream, UpstreamEffect};
    static KEY: Upstream = Upstream::new("key");
    let hint = std::time::Duration::from_secs(30);
    let library = KEY.effect_of(
        Class::RateLimited {
            retry_after: Some(hint),
        },
        &Policy::AVAILABILITY,
    );
    assert_eq!(library, UpstreamEffect::Pause(hint));
    let json = |args: &[&str]| -> serde_json::Value {
        let output = backoff(args);
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_str(&stdout(&output)).expect("one JSON object")
    };
    let paused = json(&[
        "explain",
        "--status",
        "429",
        "--header",
        "Retry-After: 30",
        "--upstream",
        "--json",
    ]);
    assert_eq!(paused["upstream_rule"], "upstream_pause");
    assert_eq!(paused["upstream_pause_ms"], 30_000);
    let outage = json(&["explain", "--status", "503", "--upstream", "--json"]);
    assert_eq!(outage["upstream_rule"], "upstream_gate");
    assert!(outage["upstream_pause_ms"].is_null());
    let answer = json(&["explain", "--status", "404", "--upstream", "--json"]);
    assert_eq!(answer["upstream_rule"], "upstream_closes");
    let success = json(&["explain", "--status", "200", "--upstream", "--json"]);
    assert_eq!(success["upstream_rule"], "upstream_closes");
    let without = json(&["explain", "--status", "503", "--json"]);
    assert!(
        without.get("upstream_rule").is_none(),
        "only with --upstream"
    );
    let text = stdout(&backoff(&[
        "explain",
        "--status",
        "429",
        "--header",
        "Retry-After: 30",
        "--upstream",
    ]));
    assert!(
        text.contains("on an upstream: every call on it waits 30.000 s, first tries included (rule: upstream_pause)"),
        "{text}"
    );
}

/// `--across`: where the next attempt goes across an ordered set, by the library's own
/// `Upstreams::moves`.
#[test]
fn explain_across_upstreams_says_where_the_next_attempt_goes() {
    use retry_runtime::{Class, Policy, Upstream, Upstreams};
    static A: Upstream = Upstream::new("claude");
    static B: Upstream = Upstream::new("gpt");
    static SET: Upstreams = Upstreams::new(&[&A, &B]);
    let json = |args: &[&str]| -> serde_json::Value {
        let output = backoff(args);
        assert!(output.status.success(), "{}", stderr(&output));
        serde_json::from_str(&stdout(&output)).expect("one JSON object")
    };
    let across = ["--across", "claude,gpt", "--json"];
    let outage = json(&[&["explain", "--status", "503"], &across[..]].concat());
    assert!(SET.moves(
        Class::Unavailable { retry_after: None },
        &Policy::AVAILABILITY
    ));
    assert_eq!(outage["across_rule"], "move");
    assert_eq!(outage["next_upstream"], "gpt");
    let last = json(
        &[
            &["explain", "--status", "503", "--from", "gpt"],
            &across[..],
        ]
        .concat(),
    );
    assert_eq!(last["across_rule"], "ladder");
    assert!(last["next_upstream"].is_null());
    let quota =
        r#"{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    let dir = std::env::temp_dir().join(format!("backoff-across-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let body = dir.join("quota.json");
    std::fs::write(&body, quota).unwrap();
    let body = body.to_str().unwrap();
    let billed = json(&[&["explain", "--status", "429", "--body", body], &across[..]].concat());
    assert_eq!(billed["class"], "quota_exhausted");
    assert_eq!(billed["retried"], false);
    assert_eq!(
        billed["across_rule"], "move",
        "a per-day quota moves: {billed}"
    );
    let answer = json(&[&["explain", "--status", "400"], &across[..]].concat());
    assert_eq!(answer["across_rule"], "stays");
    let text = stdout(&backoff(&[
        "explain",
        "--status",
        "503",
        "--across",
        "claude,gpt",
    ]));
    assert!(
        text.contains(
            "across upstreams: claude failed; the next attempt goes to gpt at once, with no wait"
        ),
        "{text}"
    );
    let wrong = backoff(&[
        "explain",
        "--status",
        "503",
        "--across",
        "claude,gpt",
        "--from",
        "x",
    ]);
    assert!(!wrong.status.success());
    assert!(stderr(&wrong).contains("`--from x` is not in `--across claude,gpt`"));
}

/// With `--upstream`, a response's rate-limit headers (a success's too) say what the key has
/// left and what the next attempt waits for it, by the library's own pacer
/// (`Upstream::pace_wait`): none of 10 left, whole in 1 s, is a tenth of a second; a call of
/// more tokens than the whole limit fails at once.
#[test]
fn explain_upstream_reads_the_rate_limit_headers() {
    let none_left = [
        "explain",
        "--status",
        "200",
        "--header",
        "x-ratelimit-limit-requests: 10",
        "--header",
        "x-ratelimit-remaining-requests: 0",
        "--header",
        "x-ratelimit-reset-requests: 1s",
        "--upstream",
    ];
    let said = json(&backoff(&[&none_left[..], &["--json"]].concat()));
    assert_eq!(said["requests_remaining"], 0);
    assert_eq!(said["pace_wait_ms"], 100);
    let text = stdout(&backoff(&none_left));
    assert!(
        text.contains("on an upstream: the key has 0 of 10 requests left; the next attempt waits 0.100 s for it (rule: upstream_pace)"),
        "{text}"
    );
    let too_large = json(&backoff(&[
        "explain",
        "--status",
        "429",
        "--header",
        "anthropic-ratelimit-tokens-limit: 1000",
        "--header",
        "anthropic-ratelimit-tokens-remaining: 1000",
        "--upstream",
        "--tokens",
        "5000",
        "--json",
    ]));
    assert_eq!(too_large["tokens_remaining"], 1000);
    assert!(too_large["pace_wait_ms"].is_null(), "{too_large}");
}
