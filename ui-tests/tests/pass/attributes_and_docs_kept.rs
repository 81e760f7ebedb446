#![deny(warnings, missing_docs)]
//! Attributes and doc comments on the function stay on it.

use retry_runtime::retry;

/// Fetches the answer. (`missing_docs` would reject this crate if the doc were lost.)
#[retry]
#[must_use = "the answer is the point"]
#[inline]
pub async fn answer() -> Result<u32, std::io::Error> {
    #![allow(clippy::needless_return)]
    return Ok(42);
}

#[cfg(any())]
#[retry]
async fn never_compiled() -> Result<(), std::io::Error> {
    compile_error!("`#[cfg]` above `#[retry]` removes the function first")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(answer().await.unwrap(), 42);
}
