use retry_runtime::retry;

#[retry(base_ms = 0)]
async fn zero() -> Result<u32, std::io::Error> {
    Ok(1)
}

#[retry(base_ms = -250)]
async fn negative() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
