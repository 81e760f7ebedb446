//! The dependency lines, as a newcomer copies them: each ```toml block named by its first line
//! (`# streams`), in the README and in the guide's streams chapter, is built, with exactly its
//! lines, in a crate of its own together with the ```rust block after it (run, for a block of
//! dev-dependencies: its snippet is a test). The crates live in cargo's test scratch folder
//! (`target/tmp`); the runtime comes from this workspace through `[patch.crates-io]`, the only
//! line the harness adds, and the workspace's lock file pins the same versions the other tests
//! use. The feature table (the guide's, `retry-runtime/src/guide/index.md`) is checked against
//! the runtime's manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const README: &str = include_str!("../../README.md");
/// The guide's chapter that holds the stream example and its lines.
const STREAMS: &str = include_str!("../../retry-runtime/src/guide/streams.md");
/// The guide's first page, which holds the feature table.
const GUIDE: &str = include_str!("../../retry-runtime/src/guide/index.md");
const MANIFEST: &str = include_str!("../../retry-runtime/Cargo.toml");

/// A dependency block: its name, its lines, and the snippet after it.
struct Block {
    name: String,
    toml: String,
    rust: String,
}

/// The block opened by `fence` at the start of `text`'s first fence, and what follows it;
/// `None` if `text` has no fence, or its first is another kind.
fn fenced<'a>(text: &'a str, fence: &str) -> Option<(&'a str, &'a str)> {
    let opened = text.find("```")?;
    let start = opened + text[opened..].strip_prefix(fence).map(|_| fence.len())?;
    let end = start + text[start..].find("\n```")?;
    Some((&text[start..=end], &text[end + 4..]))
}

fn blocks(readme: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut rest = readme;
    while let Some(at) = rest.find("```toml\n") {
        let (toml, after) = fenced(&rest[at..], "```toml\n").expect("a closed ```toml block");
        let name = toml.lines().next().unwrap_or_default();
        let name = name.strip_prefix("# ").unwrap_or(name).to_owned();
        // The snippet is the very next fenced block, prose only between.
        let (rust, after) = fenced(after, "```rust\n")
            .unwrap_or_else(|| panic!("the block after `# {name}` is not a ```rust block"));
        found.push(Block {
            name,
            toml: toml.to_owned(),
            rust: rust.to_owned(),
        });
        rest = after;
    }
    found
}

/// The README's blocks, then the streams chapter's.
fn all_blocks() -> Vec<Block> {
    let mut found = blocks(README);
    found.extend(blocks(STREAMS));
    found
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests is inside the workspace")
        .to_path_buf()
}

fn write_if_changed(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a file in a folder")).expect("make the folder");
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("write the scratch crate");
    }
}

/// Build the block named `name` in a crate of its own, with its snippet as the library (or,
/// for dev-dependencies, as an integration test), and fail with cargo's messages if it does
/// not build.
fn builds(name: &str) {
    let block = all_blocks()
        .into_iter()
        .find(|block| block.name == name)
        .unwrap_or_else(|| panic!("no ```toml block named `# {name}`"));
    let slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install-check");
    let dir = root.join(&slug);
    let runtime = workspace().join("retry-runtime");
    let manifest = format!(
        "[package]\nname = \"install-{slug}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         {}\n[patch.crates-io]\nretry-runtime = {{ path = {:?} }}\n\n[workspace]\n",
        block.toml,
        runtime.display().to_string()
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    // The workspace's lock, each time: the versions the other tests use.
    let lock = std::fs::read_to_string(workspace().join("Cargo.lock")).expect("Cargo.lock");
    write_if_changed(&dir.join("Cargo.lock"), &lock);
    let as_test =
        block.toml.contains("[dev-dependencies]") && !block.toml.contains("[dependencies]");
    if as_test {
        write_if_changed(&dir.join("src/lib.rs"), "");
        write_if_changed(&dir.join("tests/snippet.rs"), &block.rust);
    } else {
        write_if_changed(&dir.join("src/lib.rs"), &block.rust);
    }
    // A test's snippet runs; a library's builds, with its tests (none).
    let mut args = vec!["test", "--quiet", "--color=never"];
    if !as_test {
        args.push("--no-run");
    }
    let output = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", root.join("target"))
        // Builds only: debug info would take most of the time and the space.
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_TEST_DEBUG", "0")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "the README's `# {name}` block does not build its snippet:\n{}\n{}",
        manifest,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// One test for each named block, and the list of them: a block the README adds without a
/// test here fails the check below.
macro_rules! each_block_builds {
    ($($test:ident: $name:literal,)*) => {
        const BUILT: &[&str] = &[$($name),*];
        $(
            #[test]
            fn $test() {
                builds($name);
            }
        )*
    };
}

each_block_builds! {
    the_http_and_model_api_lines_build_the_readmes_example: "HTTP and model APIs",
    the_attribute_only_line_builds_its_snippet: "the attribute only",
    the_stream_lines_build_their_snippet: "streams",
    the_async_openai_lines_build_the_layer: "async-openai",
    the_reqwest_middleware_lines_build_the_middleware: "reqwest-middleware",
    the_metrics_lines_build_their_snippet: "metrics",
    the_test_util_dev_dependency_builds_and_passes_its_test: "test-util",
    the_stream_examples_lines_build_it_as_printed: "the stream example",
}

#[test]
fn every_dependency_block_in_the_readme_and_the_guide_is_built_by_a_test_here() {
    let named: Vec<String> = all_blocks().into_iter().map(|block| block.name).collect();
    assert_eq!(
        named, BUILT,
        "a ```toml block in README.md or the streams chapter and the tests here differ"
    );
}

// ---------------------------------------------------------------------------------------------
// The feature table
// ---------------------------------------------------------------------------------------------

/// Each feature of the manifest and what it turns on: other features, and `dep:` crates by name.
fn manifest_features(manifest: &str) -> BTreeMap<String, BTreeSet<String>> {
    let manifest: toml::Table = toml::from_str(manifest).expect("the manifest parses");
    let features = manifest["features"].as_table().expect("a [features] table");
    features
        .iter()
        .filter(|(name, _)| *name != "default")
        .map(|(name, enables)| {
            let enables = enables.as_array().expect("a feature is a list");
            let pulls = enables
                .iter()
                .filter_map(|entry| entry.as_str())
                .map(|entry| entry.strip_prefix("dep:").unwrap_or(entry).to_owned())
                .collect();
            (name.clone(), pulls)
        })
        .collect()
}

/// The guide's feature table: each row's feature, and the names its last column gives.
fn table_features(guide: &str) -> BTreeMap<String, BTreeSet<String>> {
    let section = &guide[guide.find("## Features").expect("a Features section")..];
    let section = &section[..3 + section[3..].find("\n## ").expect("a section after it")];
    section
        .lines()
        .filter(|line| line.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            let name = cells[0].trim().trim_matches('`').to_owned();
            let pulls = cells.last().expect("a last column");
            // Before a colon and a space is what it pulls; after it, a remark.
            let pulls = pulls.split(": ").next().unwrap_or_default();
            let names = pulls
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect();
            (name, names)
        })
        .collect()
}

/// What is out of step between the manifest's features and the guide's table.
fn out_of_step(manifest: &str, guide: &str) -> Vec<String> {
    let (wanted, shown) = (manifest_features(manifest), table_features(guide));
    let mut problems = Vec::new();
    for (feature, pulls) in &wanted {
        match shown.get(feature) {
            None => problems.push(format!(
                "feature `{feature}` has no row in the guide's table"
            )),
            Some(listed) if listed != pulls => problems.push(format!(
                "feature `{feature}` pulls in {pulls:?}, and its row says {listed:?}"
            )),
            Some(_) => {}
        }
    }
    for feature in shown
        .keys()
        .filter(|feature| !wanted.contains_key(*feature))
    {
        problems.push(format!(
            "the guide's table has a row for `{feature}`, which the manifest lacks"
        ));
    }
    problems
}

#[test]
fn the_feature_table_has_a_row_for_each_feature_naming_what_it_pulls_in() {
    let problems = out_of_step(MANIFEST, GUIDE);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_feature_added_to_the_manifest_without_a_row_is_reported() {
    let manifest = MANIFEST.replace("[features]\n", "[features]\nbrand-new = [\"dep:bytes\"]\n");
    assert_eq!(
        out_of_step(&manifest, GUIDE),
        ["feature `brand-new` has no row in the guide's table"]
    );
}

#[test]
fn a_feature_whose_row_misnames_what_it_pulls_in_is_reported() {
    let guide = GUIDE.replace("| `futures-core` |", "| `futures-util` |");
    let problems = out_of_step(MANIFEST, &guide);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("feature `stream` pulls in"),
        "{problems:?}"
    );
}
