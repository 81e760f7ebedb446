#![deny(warnings)]

use retry_runtime::{Class, Classify};
use std::time::Duration;

/// An alias is the same type: the check is by type, not by spelling.
type Hint = Option<std::time::Duration>;

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("overloaded")]
    #[classify(unavailable)]
    Overloaded {
        status: u16,
        #[classify(retry_after)]
        retry_after: Option<Duration>,
    },
    #[error("rate limited")]
    #[classify(rate_limited)]
    RateLimited(#[classify(retry_after)] Duration),
    #[error("rate limited")]
    #[classify(rate_limited)]
    Throttled(u16, #[classify(retry_after)] Hint),
}

fn main() {
    let three = Duration::from_secs(3);
    let overloaded = ModelError::Overloaded { status: 503, retry_after: Some(three) };
    assert_eq!(overloaded.classify(), Class::Unavailable { retry_after: Some(three) });
    let no_hint = ModelError::Overloaded { status: 503, retry_after: None };
    assert_eq!(no_hint.classify(), Class::Unavailable { retry_after: None });
    assert_eq!(
        ModelError::RateLimited(three).classify(),
        Class::RateLimited { retry_after: Some(three) }
    );
    assert_eq!(
        ModelError::Throttled(429, None).classify(),
        Class::RateLimited { retry_after: None }
    );
    if let ModelError::Overloaded { status, .. } = overloaded {
        assert_eq!(status, 503);
    }
}
