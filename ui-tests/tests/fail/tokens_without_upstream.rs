use retry_runtime::retry;

#[retry(policy = "availability", tokens = max_tokens)]
async fn complete(max_tokens: u32) -> Result<u32, std::io::Error> {
    Ok(max_tokens)
}

fn main() {}
