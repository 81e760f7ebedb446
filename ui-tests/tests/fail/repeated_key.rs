use retry_runtime::retry;

#[retry(attempts = 4, base_ms = 100, attempts = 5)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
