use retry_runtime::retry;
use std::io::{Error, ErrorKind};

// `#[instrument]` runs first and moves the arguments into a block of its own.
#[tracing::instrument(skip(buffer))]
#[retry(policy = "transient", attempts = 2)]
async fn fill(buffer: &mut Vec<u8>, byte: u8) -> Result<usize, Error> {
    buffer.push(byte);
    if buffer.len() < 2 {
        return Err(Error::from(ErrorKind::ConnectionReset));
    }
    Ok(buffer.len())
}

fn main() {}
