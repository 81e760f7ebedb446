use retry_runtime::retry;

#[retry(availability)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
