use retry_runtime::{Class, retry};

#[retry(timeout = "turn")]
async fn fetch() -> Result<u32, Class> {
    Ok(1)
}

#[retry(timeout = "30 s")]
async fn fetch_spaced() -> Result<u32, Class> {
    Ok(1)
}

fn main() {}
