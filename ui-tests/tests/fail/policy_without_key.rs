use retry_runtime::retry;

#[retry("outage")]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
