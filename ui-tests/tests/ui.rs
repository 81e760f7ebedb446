//! The compile-time contract of `#[retry]` and `#[derive(Classify)]` (cases named `derive_*`):
//! each misuse in `fail/` is rejected with the message
//! pinned beside it, and each supported form in `pass/` compiles (with `#![deny(warnings)]`)
//! and runs.
//!
//! Regenerate the pinned messages with `TRYBUILD=overwrite cargo test -p retry-ui-tests`, and
//! read the diff before committing.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/fail/*.rs");
    cases.pass("tests/pass/*.rs");
}
