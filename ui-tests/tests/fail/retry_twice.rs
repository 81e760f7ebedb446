use retry_runtime::retry;

// Two ladders, one inside the other: the outer would stop with `Nested` at run time.
#[retry(attempts = 3)]
#[retry(policy = "transient")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
