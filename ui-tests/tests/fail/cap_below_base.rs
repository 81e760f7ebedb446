use retry_runtime::retry;

#[retry(base_ms = 500, cap_ms = 100)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
