use retry_runtime::retry;

#[retry(budget = "2 seconds")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
