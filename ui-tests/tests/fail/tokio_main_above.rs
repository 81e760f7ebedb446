use retry_runtime::retry;

// `#[tokio::main]` runs first and makes `main` a plain `fn`: `#[retry]` goes above it.
#[tokio::main(flavor = "current_thread")]
#[retry]
async fn main() -> Result<(), std::io::Error> {
    Ok(())
}
