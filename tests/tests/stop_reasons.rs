//! Every `StopReason` is made in the ladder (`retry-runtime/src/ladder.rs` and `ladder/`),
//! where each stop is a decision of its own, but the quota's refusal, made where the quota is
//! paid. Elsewhere the runtime only reads a reason (a pattern, a match arm) or passes one on.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            into.push(path);
        }
    }
}

/// Whether the occurrence of `StopReason::` at `at` in `line` reads a reason rather than
/// makes one: in a pattern (a match arm, `matches!`, an or-pattern) or a comment.
fn reads(line: &str, at: usize) -> bool {
    let before = line[..at].trim_start();
    let after = &line[at..];
    before.starts_with("//")
        || before.starts_with('|')
        || before.contains("matches!(")
        || after.contains("=>")
        || before.ends_with("if let ")
        || before.contains("Some(StopReason")
}

#[test]
fn only_the_ladder_makes_a_stop_reason() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../retry-runtime/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut made = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // The ladder makes them; the verdict defines them.
        if relative == "ladder.rs" || relative.starts_with("ladder/") || relative == "verdict.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        // A module's own unit tests may name every reason.
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        for (number, line) in lines.iter().enumerate() {
            for (at, _) in line.match_indices("StopReason::") {
                let quota = line[at..].starts_with("StopReason::Quota")
                    && number > 0
                    && lines[number - 1].contains("The quota's payment");
                // A pattern of a `matches!` over several lines.
                let in_matches = lines[number.saturating_sub(4)..number]
                    .iter()
                    .any(|before| before.contains("matches!("));
                if !reads(line, at) && !quota && !in_matches {
                    made.push(format!("{relative}:{}: {}", number + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        made.is_empty(),
        "a StopReason made outside ladder/ (decide it there):\n{}",
        made.join("\n")
    );
}
