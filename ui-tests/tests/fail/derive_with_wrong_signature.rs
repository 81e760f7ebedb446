use retry_runtime::Classify;

fn by_status(status: u16) -> bool {
    status >= 500
}

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("status {0}")]
    #[classify(with = by_status)]
    Status(u16),
}

fn main() {}
