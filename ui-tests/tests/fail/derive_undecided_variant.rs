use retry_runtime::Classify;

// thiserror's `#[from]` converts the error; it does not say whether to retry it.
#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("no answer")]
    #[classify(from)]
    Io(#[from] std::io::Error),
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
    #[error("status {0}")]
    Status(#[from] std::num::ParseIntError),
}

fn main() {}
