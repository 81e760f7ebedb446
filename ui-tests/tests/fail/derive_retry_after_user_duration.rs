use retry_runtime::Classify;

/// A type of the user's that happens to be named `Duration`: not a hint the ladder can read.
#[derive(Debug)]
struct Duration {
    seconds: u64,
}

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("overloaded")]
    #[classify(unavailable)]
    Overloaded(#[classify(retry_after)] Option<Duration>),
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
}

fn main() {
    let _ = Duration { seconds: 1 }.seconds;
}
