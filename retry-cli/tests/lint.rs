//! `backoff lint` as CI runs it: the built binary on the fixture trees in `lint_fixtures/`
//! (listed in the repository's `.backoff-lint-ignore`, so the project's own run skips them).

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/lint_fixtures")
        .join(path)
}

fn lint(args: &[&str], path: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_backoff"))
        .arg("lint")
        .args(args)
        .arg(fixture(path))
        .output()
        .expect("the backoff binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The `--json` report of `path`.
fn report(path: &str) -> Value {
    let output = lint(&["--json"], path);
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!("--json is JSON ({error}): {}", stdout(&output));
    })
}

/// The findings' `(line, wait)` pairs.
fn findings(path: &str) -> Vec<(u64, String)> {
    report(path)["findings"]
        .as_array()
        .expect("findings is a list")
        .iter()
        .map(|finding| {
            let line = finding["line"].as_u64().expect("line is a number");
            let wait = finding["wait"].as_str().expect("wait is a string");
            (line, wait.to_owned())
        })
        .collect()
}

fn waits(path: &str) -> Vec<String> {
    findings(path).into_iter().map(|(_, wait)| wait).collect()
}

#[test]
fn seed_004s_four_run_bodies_give_four_findings_at_their_yaml_lines() {
    let output = lint(&[], "seed004");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    for line in [12, 21, 29, 35] {
        let expected = format!(
            "feature-staging.yml:{line}:13: a loop that retries computes its own wait: sleep $((attempt * 5))\n"
        );
        assert!(text.contains(&expected), "{line} in:\n{text}");
    }
    assert_eq!(text.matches(": a loop that retries").count(), 4, "{text}");
    assert_eq!(
        text.matches("\n  help: wait with `backoff sleep").count(),
        4,
        "{text}"
    );
}

#[test]
fn seed_004s_loops_rewritten_with_backoff_sleep_give_none() {
    let output = lint(&[], "seed004_backoff_sleep");
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(stdout(&output), "");
}

#[test]
fn seed_004s_loops_sleeping_what_backoff_delay_prints_give_none() {
    // The workflow sleeps `"$(backoff delay ...)"`; the script beside it through a variable.
    let output = lint(&[], "seed004_backoff_delay");
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(stdout(&output), "");
}

#[test]
fn a_while_not_git_push_sleep_loop_is_found() {
    assert_eq!(
        findings("shell/while_not_push.sh"),
        [(2, "sleep 2".to_owned())]
    );
}

#[test]
fn an_until_loop_is_found() {
    assert_eq!(
        findings("shell/until_curl.bash"),
        [(2, "sleep 3".to_owned())]
    );
}

#[test]
fn a_script_without_an_extension_is_read_by_its_shebang() {
    assert_eq!(
        findings("shell/retry-no-extension"),
        [(2, "sleep 10".to_owned())]
    );
}

#[test]
fn a_shell_heartbeat_that_never_decides_is_not_a_finding() {
    assert_eq!(findings("shell/ticker.sh"), []);
}

#[test]
fn a_rust_loop_with_tokio_time_sleep_is_found() {
    let report = report("rust/loop_tokio_sleep.rs");
    let finding = &report["findings"][0];
    assert_eq!(finding["line"], 5);
    assert_eq!(finding["column"], 23);
    assert_eq!(finding["loop_line"], 2);
    assert_eq!(finding["language"], "rust");
    assert_eq!(
        finding["wait"],
        "tokio::time::sleep(std::time::Duration::from_secs(1))"
    );
    assert_eq!(report["findings"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_use_alias_of_tokio_sleep_is_found() {
    assert_eq!(findings("rust/alias.rs"), [(8, "pause(WAIT)".to_owned())]);
}

#[test]
fn std_thread_sleep_in_a_for_loop_is_found() {
    assert_eq!(
        waits("rust/thread_sleep_in_for.rs"),
        ["std::thread::sleep(std::time::Duration::from_millis(200))"]
    );
}

#[test]
fn a_glob_import_and_a_partial_path_are_found() {
    assert_eq!(
        findings("rust/glob_and_partial_path.rs"),
        [
            (6, "sleep(WAIT)".to_owned()),
            (19, "time::sleep(WAIT)".to_owned())
        ]
    );
}

#[test]
fn a_test_under_cfg_test_that_sleeps_in_a_loop_is_found() {
    assert_eq!(findings("rust/in_cfg_test.rs").len(), 1);
}

#[test]
fn a_retry_attribute_function_is_not_a_finding() {
    let output = lint(&[], "rust/retry_attribute.rs");
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
}

#[test]
fn a_sleep_outside_any_loop_is_not_a_finding() {
    let output = lint(&[], "rust/sleep_outside_loop.rs");
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
}

#[test]
fn a_ticker_loop_that_flushes_every_round_is_not_a_finding() {
    let output = lint(&[], "rust/ticker.rs");
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
}

#[test]
fn a_loop_inside_a_macro_body_is_not_seen() {
    // Documented: a macro's input is tokens until it is expanded.
    assert_eq!(findings("rust/in_macro.rs"), []);
}

#[test]
fn an_allow_with_a_reason_suppresses_the_loop_after_it_and_only_that_one() {
    assert_eq!(
        findings("allow/with_reason.sh"),
        [(3, "sleep 2".to_owned())]
    );
    assert_eq!(findings("rust/allowed.rs"), []);
}

#[test]
fn an_allow_without_a_reason_is_a_finding() {
    let report = report("allow/without_reason.sh");
    let rules: Vec<_> = report["findings"]
        .as_array()
        .expect("findings is a list")
        .iter()
        .map(|finding| (finding["line"].clone(), finding["rule"].clone()))
        .collect();
    assert_eq!(
        rules,
        [
            (1.into(), "allow-without-reason".into()),
            (2.into(), "own-wait".into())
        ]
    );
}

#[test]
fn files_that_do_not_parse_are_reported_with_their_place_and_the_rest_are_checked() {
    let output = lint(&[], "unparsable");
    // The finding in the file that parses decides the status.
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("still_checked.sh:1:22: a loop that retries"));
    let errors = stderr(&output);
    for expected in [
        "broken.rs:1:12: cannot parse as Rust: ",
        "broken.sh:2:1: cannot parse as shell: ",
        "broken.yml:4:7: cannot parse as YAML: ",
    ] {
        assert!(errors.contains(expected), "{expected} in:\n{errors}");
    }
    assert_eq!(errors.matches("it was skipped").count(), 3, "{errors}");
}

#[test]
fn a_file_that_does_not_parse_and_nothing_else_exits_2() {
    let output = lint(&[], "unparsable_only");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
}

#[test]
fn a_path_that_does_not_exist_exits_2_and_says_so() {
    let output = lint(&[], "no/such/tree");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("cannot read it"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn json_has_the_stable_fields_of_each_finding_and_skipped_file() {
    let report = report("unparsable");
    let keys = |value: &Value| {
        let mut keys: Vec<String> = value
            .as_object()
            .expect("an object")
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(&report), ["files_checked", "findings", "skipped"]);
    assert_eq!(report["files_checked"], 4);
    assert_eq!(
        keys(&report["findings"][0]),
        [
            "column",
            "help",
            "language",
            "line",
            "loop_line",
            "path",
            "rule",
            "wait"
        ]
    );
    assert_eq!(report["findings"][0]["rule"], "own-wait");
    assert_eq!(report["findings"][0]["language"], "shell");
    assert_eq!(report["skipped"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        keys(&report["skipped"][0]),
        ["column", "line", "path", "reason"]
    );
}

#[test]
fn a_workflow_finding_quotes_only_the_waiting_words() {
    let report = report("seed004");
    assert_eq!(report["findings"][0]["language"], "workflow");
    for finding in report["findings"].as_array().expect("findings is a list") {
        assert_eq!(finding["wait"], "sleep $((attempt * 5))");
    }
}

#[test]
fn gitignore_and_backoff_lint_ignore_keep_files_out() {
    let output = lint(&["--json"], "ignored");
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["files_checked"], 1);
}

#[test]
fn every_waiting_spelling_of_tokio_async_std_smol_and_futures_timer_is_found() {
    assert_eq!(
        waits("rust/every_wait.rs"),
        [
            "tokio::time::sleep_until(deadline)",
            "async_std::task::sleep(WAIT)",
            "smol::Timer::after(WAIT)",
            "futures_timer::Delay::new(WAIT)",
            "interval.tick()",
        ]
    );
}

#[test]
fn a_workflow_expression_keeps_the_columns_after_it_and_is_quoted_as_written() {
    let report = report("workflow");
    let finding = &report["findings"][0];
    assert_eq!(
        (finding["line"].clone(), finding["column"].clone()),
        (8.into(), 65.into())
    );
    assert_eq!(finding["wait"], "sleep ${{ env.WAIT }}");
}

#[test]
fn a_folded_run_body_is_reported_at_the_scalars_start() {
    let report = report("workflow");
    let finding = &report["findings"][1];
    assert_eq!(
        (finding["line"].clone(), finding["column"].clone()),
        (11.into(), 11.into())
    );
    assert_eq!(finding["wait"], "sleep 4");
}

#[test]
fn an_allow_in_a_run_body_exempts_the_loop_under_it() {
    // The third step's `until pg_isready` loop (line 16) is allowed.
    let lines: Vec<u64> = findings("workflow")
        .into_iter()
        .map(|(line, _)| line)
        .collect();
    assert_eq!(lines, [8, 11, 29]);
}

#[test]
fn a_run_body_whose_shell_is_not_sh_or_bash_is_not_read_as_shell() {
    // pwsh and python bodies would not parse as shell; `shell: bash -euo pipefail {0}` is bash.
    let report = report("workflow");
    assert_eq!(report["skipped"], serde_json::json!([]));
    let last = &report["findings"][2];
    assert_eq!(
        (last["line"].clone(), last["wait"].clone()),
        (29.into(), "sleep 6".into())
    );
}

#[test]
fn a_sleep_of_a_variable_not_from_backoff_delay_in_the_loop_is_found() {
    assert_eq!(
        findings("shell/variables.sh"),
        [
            (6, "sleep \"$wait_s\"".to_owned()),
            (12, "sleep \"$wait_s\"".to_owned())
        ]
    );
}

#[test]
fn a_file_that_is_not_utf8_is_reported_without_a_made_up_place() {
    let tree = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(tree.path().join("latin1.sh"), b"sleep 2 # caf\xe9\n").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_backoff"))
        .arg("lint")
        .arg(tree.path())
        .output()
        .expect("the backoff binary runs");
    assert_eq!(output.status.code(), Some(2));
    let errors = stderr(&output);
    assert!(
        errors.contains("latin1.sh: not UTF-8 (at byte 13)"),
        "{errors}"
    );
}

#[test]
fn a_file_over_the_size_limit_is_reported_and_the_rest_checked() {
    let tree = tempfile::tempdir().expect("a temporary directory");
    let huge = vec![b' '; 4 * 1024 * 1024 + 1];
    std::fs::write(tree.path().join("huge.rs"), huge).expect("write");
    std::fs::write(
        tree.path().join("retry.sh"),
        "until true; do sleep 1; done\n",
    )
    .expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_backoff"))
        .arg("lint")
        .arg(tree.path())
        .output()
        .expect("the backoff binary runs");
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("retry.sh:1:16: a loop that retries"));
    assert!(stderr(&output).contains("huge.rs: too large to check (over 4194304 bytes)"));
}
