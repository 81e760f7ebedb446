#![deny(warnings)]

// The runtime under another name, as after `my_retry = { package = "retry-runtime" }`.
extern crate retry_runtime as my_retry;

// Nothing named `retry_runtime` is in reach at the crate's root: only the `crate` key finds it.
mod retry_runtime {}

use my_retry::{Class, Classify};

#[derive(Debug, thiserror::Error, Classify)]
#[classify(crate = "::my_retry")]
enum ModelError {
    #[error("overloaded")]
    #[classify(unavailable)]
    Overloaded,
}

#[derive(Debug, thiserror::Error, Classify)]
#[error("timed out")]
#[classify(timeout, crate = my_retry)]
struct TimedOut;

fn main() {
    assert_eq!(ModelError::Overloaded.classify(), Class::Unavailable { retry_after: None });
    assert_eq!(TimedOut.classify(), Class::Timeout);
}
