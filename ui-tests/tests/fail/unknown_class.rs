use retry_runtime::retry;

#[retry(also_retry = [invalid_output, Timeout], never_retry = [Ratelimited])]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
