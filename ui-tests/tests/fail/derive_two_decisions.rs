use retry_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("overloaded")]
    #[classify(unavailable, server_error)]
    Overloaded,
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
}

fn main() {}
