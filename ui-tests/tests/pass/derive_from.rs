#![deny(warnings)]

use retry_runtime::{Class, Classify};
use std::io;

#[derive(Debug, thiserror::Error, Classify)]
#[error("status {0}")]
#[classify(with = Status::class)]
struct Status(u16);

impl Status {
    fn class(&self) -> Class {
        match self.0 {
            502..=504 => Class::Unavailable { retry_after: None },
            _ => Class::Definitive,
        }
    }
}

// thiserror's `#[from]` converts; `#[classify(from)]` classifies as the wrapped error does.
#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error(transparent)]
    #[classify(from)]
    Io(#[from] io::Error),
    #[error(transparent)]
    #[classify(transparent)]
    Status(#[from] Status),
    #[error("{op}: {source}")]
    #[classify(from)]
    Op {
        op: &'static str,
        #[classify(from)]
        source: io::Error,
    },
    // Marking the field alone is the same decision.
    #[error("{0}: {1}")]
    Boxed(&'static str, #[classify(from)] Box<ModelError>),
}

fn main() {
    let refused = ModelError::from(io::Error::from(io::ErrorKind::ConnectionRefused));
    assert_eq!(refused.classify(), Class::Transport);
    let unavailable = ModelError::from(Status(503));
    assert_eq!(unavailable.classify(), Class::Unavailable { retry_after: None });
    let op = ModelError::Op { op: "read", source: io::ErrorKind::TimedOut.into() };
    assert_eq!(op.classify(), Class::Timeout);
    let boxed = ModelError::Boxed("retrying", Box::new(ModelError::from(Status(404))));
    assert_eq!(boxed.classify(), Class::Definitive);
    assert_eq!(boxed.to_string(), "retrying: status 404");
}
