use retry_runtime::retry;

// `outage` waits 5 + 15 + 45 s at worst: a minute is not enough.
#[retry(policy = "outage", budget = "60s")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
