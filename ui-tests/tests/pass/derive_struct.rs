#![deny(warnings)]

use retry_runtime::{Class, Classify};
use std::time::Duration;

#[derive(Debug, thiserror::Error, Classify)]
#[error("the model is overloaded")]
#[classify(unavailable)]
struct Overloaded {
    #[classify(retry_after)]
    retry_after: Option<Duration>,
}

#[derive(Debug, thiserror::Error, Classify)]
#[error("timed out")]
#[classify(timeout)]
struct TimedOut;

#[derive(Debug, thiserror::Error, Classify)]
#[error("upload of {name} failed")]
#[classify(from)]
struct UploadError {
    name: String,
    #[source]
    #[classify(from)]
    source: std::io::Error,
}

#[derive(Debug, thiserror::Error, Classify)]
#[error(transparent)]
#[classify(transparent)]
struct Wrapped(#[from] std::io::Error);

fn main() {
    let hint = Some(Duration::from_secs(3));
    assert_eq!(Overloaded { retry_after: hint }.classify(), Class::Unavailable { retry_after: hint });
    assert_eq!(TimedOut.classify(), Class::Timeout);
    let upload = UploadError { name: "a".into(), source: std::io::ErrorKind::BrokenPipe.into() };
    assert_eq!(upload.classify(), Class::Transport);
    assert_eq!(upload.name, "a");
    let wrapped = Wrapped::from(std::io::Error::from(std::io::ErrorKind::NotFound));
    assert_eq!(wrapped.classify(), Class::Definitive);
}
