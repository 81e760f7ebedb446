use retry_runtime::retry;

#[derive(Debug)]
struct FetchError;

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("fetch failed")
    }
}

#[retry]
async fn fetch() -> Result<u32, FetchError> {
    Err(FetchError)
}

fn main() {}
