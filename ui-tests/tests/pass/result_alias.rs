#![deny(warnings)]

use retry_runtime::{retry, testing};
use std::io::{self, ErrorKind};

#[retry]
async fn read_config() -> io::Result<String> {
    Err(io::Error::from(ErrorKind::ConnectionAborted))
}

#[retry]
async fn read_len() -> std::io::Result<usize> {
    Ok(3)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (result, recorded) = testing::scope(read_config()).await;
    assert_eq!(result.unwrap_err().kind(), ErrorKind::ConnectionAborted);
    assert_eq!(recorded.waits().len(), 3);
    assert_eq!(read_len().await.unwrap(), 3);
}
