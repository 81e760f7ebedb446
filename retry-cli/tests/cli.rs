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
                let expected = ladder::ladder_wait(&policy, attempt, Draw::from_unit(unit));
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
