use retry_runtime::Classify;
use std::time::Duration;

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("server error")]
    #[classify(server_error)]
    Internal {
        #[classify(retry_after)]
        retry_after: Option<Duration>,
    },
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
}

fn main() {}
