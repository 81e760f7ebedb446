#![deny(warnings)]

use retry_runtime::{retry, testing};
use std::io::{Error, ErrorKind};

// `#[retry]` first, then `#[instrument]`: one span covers the call, its retries inside it.
#[retry(policy = "transient", attempts = 2)]
#[tracing::instrument(skip(buffer))]
async fn fill(buffer: &mut Vec<u8>, byte: u8) -> Result<usize, Error> {
    buffer.push(byte);
    if buffer.len() < 2 {
        return Err(Error::from(ErrorKind::ConnectionReset));
    }
    Ok(buffer.len())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut buffer = Vec::new();
    let (result, recorded) = testing::scope(fill(&mut buffer, 7)).await;
    assert_eq!(result.unwrap(), 2);
    assert_eq!(recorded.waits().len(), 1);
}
