use retry_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("{op} failed: {source}")]
    #[classify(from)]
    Io { op: &'static str, source: std::io::Error },
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
}

fn main() {}
