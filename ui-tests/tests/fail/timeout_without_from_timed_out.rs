use retry_runtime::{Class, Classify, retry};

#[derive(Debug)]
struct FetchError;

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("fetch failed")
    }
}

impl Classify for FetchError {
    fn classify(&self) -> Class {
        Class::Transport
    }
}

// An attempt that runs out of time must become a `FetchError`, and nothing says how.
#[retry(policy = "transient", timeout = "30s")]
async fn fetch() -> Result<u32, FetchError> {
    Err(FetchError)
}

fn main() {}
