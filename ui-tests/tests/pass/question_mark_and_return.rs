#![deny(warnings)]

use retry_runtime::{retry, testing};
use std::io::{Error, ErrorKind};

fn parse(input: &str) -> Result<u32, Error> {
    input
        .parse()
        .map_err(|_| Error::from(ErrorKind::InvalidData))
}

#[retry]
async fn double(input: &str) -> Result<u32, Error> {
    if input.is_empty() {
        return Ok(0);
    }
    let n = parse(input)?;
    Ok(n * 2)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(double("").await.unwrap(), 0);
    assert_eq!(double("21").await.unwrap(), 42);
    let (failed, recorded) = testing::scope(double("x")).await;
    assert_eq!(failed.unwrap_err().kind(), ErrorKind::InvalidData);
    assert!(recorded.waits().is_empty());
}
