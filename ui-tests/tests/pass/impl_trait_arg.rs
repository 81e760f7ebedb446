#![deny(warnings)]

use retry_runtime::{retry, testing};
use std::io::{Error, ErrorKind};

#[retry]
async fn send(body: impl AsRef<[u8]>, mut attempts: impl FnMut() -> u32) -> Result<usize, Error> {
    if attempts() < 2 {
        return Err(Error::from(ErrorKind::BrokenPipe));
    }
    Ok(body.as_ref().len())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut made = 0;
    let (sent, recorded) = testing::scope(send("hello", || {
        made += 1;
        made
    }))
    .await;
    assert_eq!(sent.unwrap(), 5);
    assert_eq!(recorded.waits().len(), 1);
}
