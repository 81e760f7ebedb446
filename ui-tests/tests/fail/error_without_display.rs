use retry_runtime::{Class, Classify, retry};

#[derive(Debug)]
struct FetchError;

impl Classify for FetchError {
    fn classify(&self) -> Class {
        Class::Transport
    }
}

// Notices and reports show the error: it must implement `Display`.
#[retry]
async fn fetch() -> Result<u32, FetchError> {
    Err(FetchError)
}

fn main() {}
