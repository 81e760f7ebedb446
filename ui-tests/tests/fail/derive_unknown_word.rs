use retry_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("no answer")]
    #[classify(trasport)]
    Connect,
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
}

fn main() {}
