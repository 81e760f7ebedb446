#![deny(warnings)]

use retry_runtime::{retry, testing};
use std::io::{Error, ErrorKind};

trait Model {
    async fn complete(&self, prompt: &str) -> Result<String, Error>;

    // A default body can be retried too.
    #[retry(policy = "transient")]
    async fn ping(&self) -> Result<(), Error> {
        Ok(())
    }
}

struct Echo;

impl Model for Echo {
    #[retry]
    async fn complete(&self, prompt: &str) -> Result<String, Error> {
        if prompt.is_empty() {
            return Err(Error::from(ErrorKind::InvalidInput));
        }
        Ok(prompt.to_uppercase())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (result, recorded) = testing::scope(Echo.complete("")).await;
    assert_eq!(result.unwrap_err().kind(), ErrorKind::InvalidInput);
    assert!(recorded.waits().is_empty());
    assert_eq!(Echo.complete("hi").await.unwrap(), "HI");
    Echo.ping().await.unwrap();
}
