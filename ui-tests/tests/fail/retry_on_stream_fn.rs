use retry_runtime::retry;

// Retrying the call that opens a stream never retries what fails inside it.
#[retry]
async fn tokens() -> Result<impl futures_core::Stream<Item = u32>, std::io::Error> {
    Ok(retry_runtime::testing::stream_of(vec![1, 2]))
}

fn main() {}
