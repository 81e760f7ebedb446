#![deny(warnings)]

use retry_runtime::{Class, Classify};

// Every word, one per variant, next to thiserror.
#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("no answer")]
    #[classify(transport)]
    Connect,
    #[error("overloaded")]
    #[classify(unavailable)]
    Overloaded,
    #[error("internal error")]
    #[classify(server_error)]
    Internal,
    #[error("timed out")]
    #[classify(timeout)]
    TimedOut,
    #[error("rate limited")]
    #[classify(rate_limited)]
    RateLimited,
    #[error("budget refused")]
    #[classify(quota_exhausted)]
    BudgetRefused,
    #[error("invalid tool arguments: {0}")]
    #[classify(invalid_output)]
    InvalidToolArguments(String),
    #[error("cancelled")]
    #[classify(cancelled)]
    Cancelled,
    #[error("bad request: {detail}")]
    #[classify(definitive)]
    BadRequest { detail: String },
}

fn main() {
    let cases = [
        (ModelError::Connect, Class::Transport),
        (ModelError::Overloaded, Class::Unavailable { retry_after: None }),
        (ModelError::Internal, Class::ServerError),
        (ModelError::TimedOut, Class::Timeout),
        (ModelError::RateLimited, Class::RateLimited { retry_after: None }),
        (ModelError::BudgetRefused, Class::QuotaExhausted),
        (ModelError::InvalidToolArguments("{".into()), Class::InvalidOutput),
        (ModelError::Cancelled, Class::Cancelled),
        (ModelError::BadRequest { detail: "no model".into() }, Class::Definitive),
    ];
    for (error, class) in cases {
        assert_eq!(error.classify(), class, "{error}");
    }
}
