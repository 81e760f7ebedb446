use retry_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("rate limited")]
    #[classify(rate_limited)]
    RateLimited {
        #[classify(retry_after)]
        retry_after_secs: u64,
    },
    #[error("bad request")]
    #[classify(definitive)]
    BadRequest,
}

fn main() {}
