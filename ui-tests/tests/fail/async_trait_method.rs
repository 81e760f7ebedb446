use retry_runtime::retry;
use std::io::Error;

#[async_trait::async_trait]
trait Model {
    async fn complete(&self, prompt: &str) -> Result<String, Error>;
}

struct Echo;

// `#[async_trait]` on the impl rewrites the method before `#[retry]` sees it.
#[async_trait::async_trait]
impl Model for Echo {
    #[retry]
    async fn complete(&self, prompt: &str) -> Result<String, Error> {
        Ok(prompt.to_uppercase())
    }
}

fn main() {}
