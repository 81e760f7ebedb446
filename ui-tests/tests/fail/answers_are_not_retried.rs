use retry_runtime::retry;

#[retry(also_retry = [Definitive, Cancelled, Timeout], never_retry = [Timeout])]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
