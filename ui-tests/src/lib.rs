//! trybuild cases for `#[retry]` and `#[derive(Classify)]` live in `tests/`; this library holds
//! the one rule their checks share.

/// The first of our internals a compiler message names: `__private` anywhere, or a source
/// file of the runtime or the macros, except where rustc points at a public item's own
/// signature, as it does for any library (`note: required by a bound in `RetryStream::
/// commit_when``, `help: the trait `AsEvent` is implemented for `Event``). A user of the
/// published crate sees that file under cargo's registry.
///
/// ```
/// use retry_ui_tests::internal_named;
///
/// let bound = "note: required by a bound in `is_content`\n --> $WORKSPACE/retry-runtime/src/sse/content.rs";
/// assert_eq!(internal_named(bound), None);
/// assert_eq!(internal_named("  --> retry-runtime/src/engine/run.rs:3:1"), Some("retry-runtime/src"));
/// assert_eq!(internal_named("note: required by a bound in `__private::check`"), Some("__private"));
/// ```
pub fn internal_named(message: &str) -> Option<&'static str> {
    const PUBLIC_SIGNATURE: [&str; 2] = ["note: required by a bound in `", "help: the trait `"];
    let mut before = "";
    for line in message.lines() {
        if line.contains("__private") {
            return Some("__private");
        }
        for file in ["retry-runtime/src", "retry-macros/src"] {
            let at_signature = line.trim_start().starts_with("-->")
                && PUBLIC_SIGNATURE
                    .iter()
                    .any(|note| before.trim_start().starts_with(note));
            if line.contains(file) && !at_signature {
                return Some(file);
            }
        }
        before = line;
    }
    None
}
