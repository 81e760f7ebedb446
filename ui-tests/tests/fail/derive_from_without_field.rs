use retry_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("timed out")]
    #[classify(from)]
    TimedOut,
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
}

fn main() {}
