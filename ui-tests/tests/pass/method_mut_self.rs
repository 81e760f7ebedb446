#![deny(warnings)]

use retry_runtime::{retry, testing};
use std::io::{Error, ErrorKind};

struct Counter {
    calls: u32,
}

impl Counter {
    #[retry(attempts = 3)]
    async fn bump(&mut self) -> Result<u32, Error> {
        self.calls += 1;
        if self.calls < 3 {
            return Err(Error::from(ErrorKind::ConnectionRefused));
        }
        Ok(self.calls)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut counter = Counter { calls: 0 };
    let (result, _) = testing::scope(counter.bump()).await;
    assert_eq!(result.unwrap(), 3);
    assert_eq!(counter.calls, 3);
}
