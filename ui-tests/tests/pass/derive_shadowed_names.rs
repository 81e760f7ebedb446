#![deny(warnings)]
#![no_implicit_prelude]
#![allow(dead_code)]

// The expansion names everything by absolute path: none of these local names may capture it.
mod core {}
mod std {}
struct Result;
struct Class;
struct Duration;
struct Option;
struct RetryAfter;
trait Classify {}

extern crate retry_runtime;
extern crate thiserror;

#[derive(Debug, thiserror::Error, retry_runtime::Classify)]
enum ModelError {
    #[error("overloaded")]
    #[classify(unavailable)]
    Overloaded(#[classify(retry_after)] ::std::time::Duration),
    #[error("rate limited")]
    #[classify(rate_limited)]
    RateLimited {
        #[classify(retry_after)]
        hint: ::std::option::Option<::std::time::Duration>,
    },
    #[error("no answer")]
    #[classify(from)]
    Io(#[from] ::std::io::Error),
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
}

#[derive(Debug, thiserror::Error, retry_runtime::Classify)]
#[error("timed out")]
#[classify(timeout)]
struct TimedOut;

#[derive(retry_runtime::Classify)]
enum Never {}

fn main() {
    use ::retry_runtime::Classify as _;
    let three = ::std::time::Duration::from_secs(3);
    ::std::assert_eq!(
        ModelError::Overloaded(three).classify(),
        ::retry_runtime::Class::Unavailable { retry_after: ::std::option::Option::Some(three) }
    );
    ::std::assert_eq!(ModelError::BadRequest.classify(), ::retry_runtime::Class::Definitive);
    ::std::assert_eq!(TimedOut.classify(), ::retry_runtime::Class::Timeout);
}
