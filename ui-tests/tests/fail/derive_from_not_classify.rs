use retry_runtime::Classify;

#[derive(Debug, thiserror::Error)]
#[error("parse failed")]
struct ParseError;

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error(transparent)]
    #[classify(from)]
    Parse(#[from] ParseError),
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
}

fn main() {}
