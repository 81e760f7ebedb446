//! The three publishable crates as crates.io and docs.rs see them: every feature-gated public
//! item of the runtime marked with its feature for docs.rs, and each package holding the files
//! its own tests, doctests and build read, and nothing else.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// The public items behind `#[cfg(feature = ...)]` without the `doc(cfg(...))` that shows the
/// feature on docs.rs: `path:line: item`.
fn unmarked_feature_items() -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&workspace().join("retry-runtime/src"), &mut files);
    let mut unmarked = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file");
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let line = line.trim();
            if !(line.starts_with("#[cfg(") && line.contains("feature")) {
                continue;
            }
            // The item the attribute is on: past the other attributes and doc comments.
            let rest = &lines[at + 1..];
            let Some(offset) = rest.iter().position(|l| {
                let l = l.trim();
                !(l.starts_with("#[") || l.starts_with("//") || l.is_empty())
            }) else {
                continue;
            };
            let item = rest[offset].trim();
            let public = item.starts_with("pub ") || item.starts_with("impl");
            let marked = rest[..offset].iter().any(|l| l.contains("doc(cfg("));
            if public && !item.starts_with("impl") && !marked {
                unmarked.push(format!("{}:{}: {item}", file.display(), at + 1));
            }
        }
    }
    unmarked
}

#[test]
fn every_feature_gated_public_item_shows_its_feature_on_docs_rs() {
    let unmarked = unmarked_feature_items();
    assert!(
        unmarked.is_empty(),
        "add `#[cfg_attr(docsrs, doc(cfg(...)))]` beside each `#[cfg(feature = ...)]`:\n{}",
        unmarked.join("\n")
    );
}

/// `cargo package --list` of `package`: the files it would publish.
fn package_list(package: &str) -> Vec<String> {
    let output = Command::new(env!("CARGO"))
        .current_dir(workspace())
        .args([
            "package",
            "--list",
            "--allow-dirty",
            "--offline",
            "-p",
            package,
        ])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo package --list -p {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("paths in UTF-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// What every package may hold besides what its tests read: its manifest, sources, tests,
/// benches, the README and cargo's own records.
fn is_expected(path: &str) -> bool {
    ["src/", "tests/", "benches/"]
        .iter()
        .any(|folder| path.starts_with(folder))
        || [
            "Cargo.toml",
            "Cargo.toml.orig",
            "Cargo.lock",
            "README.md",
            ".cargo_vcs_info.json",
        ]
        .contains(&path)
}

fn assert_package(package: &str, read_by_tests: &[&str]) {
    let listed = package_list(package);
    for needed in read_by_tests {
        assert!(
            listed.iter().any(|path| path == needed),
            "{package}'s package lacks {needed}, which its tests read: {listed:?}"
        );
    }
    let strays: Vec<&String> = listed
        .iter()
        .filter(|path| !is_expected(path) && !read_by_tests.contains(&path.as_str()))
        .collect();
    assert!(strays.is_empty(), "{package}'s package carries {strays:?}");
}

#[test]
fn the_runtimes_package_holds_what_its_tests_and_doctests_read_and_nothing_else() {
    assert_package(
        "retry-runtime",
        &[
            "duration_cases.txt",
            "doc/testing_example.rs",
            "doc/testing_rate_limit.rs",
            "doc/testing_stream_resume.rs",
            "doc/testing_fallback.rs",
            "README.md",
        ],
    );
}

#[test]
fn the_macro_crates_package_holds_what_its_tests_read_and_nothing_else() {
    // `duration.rs`'s tests read the runtime's cases, through a link in the crate.
    assert_package(
        "retry-macros",
        &["duration_cases.txt", "src/lib.rs", "README.md"],
    );
}

#[test]
fn the_clis_package_holds_what_its_tests_read_and_nothing_else() {
    assert_package(
        "retry-cli",
        &[
            "README.md",
            "tests/lint_fixtures/seed004/.github/workflows/feature-staging.yml",
        ],
    );
}
