use retry_runtime::retry;

#[retry(also_retry = ["InvalidOutput"], never_retry = ["RateLimited"])]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
