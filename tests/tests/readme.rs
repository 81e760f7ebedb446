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
