#![deny(warnings)]

use retry_runtime::{retry, testing};
use std::io::{Error, ErrorKind};

#[retry]
async fn connect(refusals: &mut u32) -> Result<&'static str, Error> {
    if *refusals > 0 {
        *refusals -= 1;
        return Err(Error::from(ErrorKind::ConnectionRefused));
    }
    Ok("connected")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut refusals = 2;
    let (result, recorded) = testing::scope(connect(&mut refusals)).await;
    assert_eq!(result.unwrap(), "connected");
    assert_eq!(recorded.waits().len(), 2);
}
