use retry_runtime::{Policy, retry};

const NEVER: Policy = Policy::AVAILABILITY.with_attempts(0);

#[retry(policy = NEVER)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
