#![deny(warnings)]

use retry_runtime::{Class, Classify};
use std::fmt::Debug;

// A delegated field whose type names a type parameter gets a `Classify` bound on the impl.
#[derive(Debug, thiserror::Error, Classify)]
enum Layered<'a, E: Debug + std::error::Error + 'static, const N: usize> {
    #[error(transparent)]
    #[classify(from)]
    Inner(#[from] E),
    #[error("{0}")]
    #[classify(definitive)]
    Refused(&'a str),
    #[error("{0:?}")]
    #[classify(invalid_output)]
    Garbled([u8; N]),
}

#[derive(Debug, thiserror::Error, Classify)]
#[error("wrapped")]
#[classify(from)]
struct Wrapper<T: Debug>(T)
where
    T: Clone;

fn main() {
    let inner: Layered<'_, std::io::Error, 2> = Layered::Inner(std::io::ErrorKind::TimedOut.into());
    assert_eq!(inner.classify(), Class::Timeout);
    let refused: Layered<'_, std::io::Error, 2> = Layered::Refused("no");
    assert_eq!(refused.classify(), Class::Definitive);
    let garbled: Layered<'_, std::io::Error, 2> = Layered::Garbled([0, 1]);
    assert_eq!(garbled.classify(), Class::InvalidOutput);
    assert_eq!(Wrapper(Class::Cancelled).classify(), Class::Cancelled);
}
