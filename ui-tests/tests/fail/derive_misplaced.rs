use retry_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
#[classify(transport)]
enum ModelError {
    #[error("overloaded")]
    #[classify(default = unavailable)]
    Overloaded,
    #[error("bad request {0}")]
    BadRequest(#[classify(definitive)] u16),
}

fn main() {}
