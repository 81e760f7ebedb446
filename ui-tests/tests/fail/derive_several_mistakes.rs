use retry_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
enum ModelError {
    #[error("no answer")]
    #[classify(transprt)]
    Connect,
    #[error("overloaded")]
    #[classify(unavailable, timeout)]
    Overloaded,
    #[error("timed out")]
    #[classify(from)]
    TimedOut,
    #[error("bad request")]
    BadRequest,
}

// The derive still implements `Classify`, so this use reports nothing more.
fn class(error: &ModelError) -> retry_runtime::Class {
    error.classify()
}

fn main() {
    let _ = class;
}
