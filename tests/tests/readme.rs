//! The README's headline example is the one this crate compiles (`src/headline.rs`).

#[test]
fn the_readme_headline_is_the_compiled_example() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../src/headline.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md must show tests/src/headline.rs verbatim in a ```rust block"
    );
}

#[test]
fn the_readmes_stream_example_is_the_compiled_one() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../src/stream_headline.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md must show tests/src/stream_headline.rs verbatim in a ```rust block"
    );
}

#[test]
fn the_readmes_testing_example_is_the_doctested_one() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../../retry-runtime/doc/testing_example.rs");
    let block = format!("```rust\n{example}```");
    assert!(
        readme.contains(&block),
        "README.md must show retry-runtime/doc/testing_example.rs verbatim in a ```rust block"
    );
}

#[test]
fn the_readmes_own_error_around_call_error_is_the_compiled_one() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../src/agent_error.rs");
    // The README shows the enum; the file adds the two `use` lines it needs.
    let shown = example
        .split_once("\n\n")
        .expect("the uses, then the enum")
        .1;
    let block = format!("```rust\n{shown}```");
    assert!(
        readme.contains(&block),
        "README.md must show tests/src/agent_error.rs (after its uses) verbatim in a ```rust block"
    );
}
