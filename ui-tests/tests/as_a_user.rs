//! The compile errors as a user sees them: a plain `cargo check` with incremental compilation
//! on, in a crate of its own that depends on the runtime by path. trybuild builds without
//! incremental compilation, where rustc printed some of our errors once that a user saw twice.
//!
//! Each source below must fail with each of its errors printed once, and no message may name
//! `__private` or a file of this workspace but at a public signature (`internal_named`). The
//! scratch crate and its target directory live in `target/user-check`, so the dependencies are
//! built once, not on every run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The compile-fail sources checked as a user checks them, from `tests/fail`.
const SOURCES: &[&str] = &[
    "across_through_self_not_a_set.rs",
    "error_without_classify.rs",
    "error_without_classify_alias.rs",
    "moves_argument.rs",
    "not_result_alias.rs",
    "quota_const.rs",
    "retry_on_stream_fn.rs",
    "stream_commit_timeout_without_timed_out.rs",
    "stream_commit_when_without_ended_early.rs",
    "stream_is_content_on_strings.rs",
    "upstream_const.rs",
    "upstream_through_type_parameter_not_an_upstream.rs",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ui-tests is inside the workspace")
        .to_path_buf()
}

/// A crate of its own (not a member of this workspace), depending on the runtime by path.
fn scratch_crate() -> PathBuf {
    let root = workspace().join("target/user-check");
    let dir = root.join("crate");
    std::fs::create_dir_all(dir.join("src")).expect("create the scratch crate");
    let runtime = workspace().join("retry-runtime");
    let manifest = format!(
        "[package]\nname = \"user-check\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\nretry-runtime = {{ path = {:?}, features = [\"sse\", \"reqwest\", \"test-util\"] }}\n\
         futures-core = \"0.3\"\n\
         tokio = {{ version = \"1\", default-features = false, features = [\"macros\", \"rt\"] }}\n\n\
         [workspace]\n",
        runtime.display().to_string()
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    // The workspace's lock file: the same versions, no resolution against the registry.
    let lock = std::fs::read_to_string(workspace().join("Cargo.lock")).expect("Cargo.lock");
    write_if_changed(&dir.join("Cargo.lock"), &lock);
    dir
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("write the scratch crate");
    }
}

/// `cargo check`'s messages for `source` as the crate's `main.rs`.
fn check_as_a_user(dir: &Path, source: &str) -> String {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fail")
            .join(source),
    )
    .expect("read the case");
    write_if_changed(&dir.join("src/main.rs"), &text);
    let output = Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--offline", "--color=never"])
        .current_dir(dir)
        .env("CARGO_INCREMENTAL", "1")
        .env(
            "CARGO_TARGET_DIR",
            workspace().join("target/user-check/target"),
        )
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("run cargo check");
    assert!(
        !output.status.success(),
        "{source} compiled as a user's crate"
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Each error's header and location: `error[E0277]: ... --> src/main.rs:13:33`.
fn errors(stderr: &str) -> Vec<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, line)| {
            line.starts_with("error") && !line.starts_with("error: could not compile")
        })
        .map(|(i, line)| {
            let at = lines.get(i + 1).map_or("", |next| next.trim());
            format!("{line} {at}")
        })
        .collect()
}

#[test]
fn each_mistake_is_one_message_in_the_users_terms_under_incremental_cargo_check() {
    let dir = scratch_crate();
    let mut problems = Vec::new();
    for source in SOURCES {
        // Twice: the second check reads the incremental cache, where a copy appeared before.
        for round in ["first", "second"] {
            // Touch the source so cargo checks it again rather than replaying its cache.
            std::fs::remove_file(dir.join("src/main.rs")).ok();
            let stderr = check_as_a_user(&dir, source);
            let errors = errors(&stderr);
            if errors.is_empty() {
                problems.push(format!(
                    "{source} ({round} check): no error found in\n{stderr}"
                ));
            }
            for (i, error) in errors.iter().enumerate() {
                if errors[..i].contains(error) {
                    problems.push(format!(
                        "{source} ({round} check): printed twice: {error}\n{stderr}"
                    ));
                }
            }
            if let Some(internal) = retry_ui_tests::internal_named(&stderr) {
                problems.push(format!(
                    "{source} ({round} check): names `{internal}`:\n{stderr}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
