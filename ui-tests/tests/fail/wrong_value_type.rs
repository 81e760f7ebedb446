use retry_runtime::retry;

#[retry(attempts = "4", jitter = full, base_ms = 2.5, budget = 2s, name = model)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
