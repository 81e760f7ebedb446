#![deny(warnings)]

use retry_runtime::{retry, testing};
use std::cell::Cell;
use std::io::{Error, ErrorKind};

struct Client {
    failures_left: Cell<u32>,
}

impl Client {
    #[retry]
    async fn fetch(&self, path: &str) -> Result<String, Error> {
        if self.failures_left.get() > 0 {
            self.failures_left.set(self.failures_left.get() - 1);
            return Err(Error::from(ErrorKind::ConnectionReset));
        }
        Ok(format!("GET {path}"))
    }

    // An elided lifetime in the return type borrows from `self`.
    #[retry]
    async fn name(&self) -> Result<&str, Error> {
        Ok("client")
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let client = Client {
        failures_left: Cell::new(1),
    };
    let (result, _) = testing::scope(client.fetch("/health")).await;
    assert_eq!(result.unwrap(), "GET /health");
    assert_eq!(client.name().await.unwrap(), "client");
}
