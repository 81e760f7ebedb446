#![deny(warnings)]

use retry_runtime::{Class, Classify};
use std::time::Duration;

// The weaker choice, written out: a new variant takes `definitive` without a decision.
#[derive(Debug, thiserror::Error, Classify)]
#[classify(default = definitive)]
enum StoreError {
    #[error("overloaded")]
    #[classify(unavailable)]
    Overloaded,
    #[error("not found")]
    NotFound,
    #[error("conflict")]
    Conflict,
}

// A default that carries a hint reads a marked field.
#[derive(Debug, thiserror::Error, Classify)]
#[classify(default = rate_limited)]
enum Limits {
    #[error("per minute")]
    PerMinute(#[classify(retry_after)] Duration),
    #[error("per day")]
    PerDay,
}

fn main() {
    assert_eq!(StoreError::Overloaded.classify(), Class::Unavailable { retry_after: None });
    assert_eq!(StoreError::NotFound.classify(), Class::Definitive);
    assert_eq!(StoreError::Conflict.classify(), Class::Definitive);
    let minute = Duration::from_secs(60);
    assert_eq!(Limits::PerMinute(minute).classify(), Class::RateLimited { retry_after: Some(minute) });
    assert_eq!(Limits::PerDay.classify(), Class::RateLimited { retry_after: None });
}
