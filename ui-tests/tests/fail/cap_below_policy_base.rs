use retry_runtime::retry;

// `outage` starts at 5 s, so a 1 s cap is below its base: known once the policy is a value.
#[retry(policy = "outage", cap_ms = 1000)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
