use retry_runtime::retry;

// A mistake in the body is reported in the body, as without the attribute.
#[retry]
async fn count() -> Result<u32, std::io::Error> {
    Ok("three")
}

fn main() {}
