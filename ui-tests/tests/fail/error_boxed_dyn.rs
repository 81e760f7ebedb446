use retry_runtime::retry;

// `Classify` cannot be implemented for `dyn Error` outside the runtime: wrap it instead.
#[retry]
async fn fetch() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
    Err("down".into())
}

fn main() {}
