use retry_runtime::{Class, Classify, UpstreamPaused, retry};

#[derive(Debug)]
struct CallError(UpstreamPaused);

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<UpstreamPaused> for CallError {
    fn from(paused: UpstreamPaused) -> CallError {
        CallError(paused)
    }
}

impl Classify for CallError {
    fn classify(&self) -> Class {
        self.0.classify()
    }
}

struct Client;

impl Client {
    const MODELS: &'static str = "claude, gpt";

    // A path through `Self` is kept by pointer, and must still be a set of upstreams.
    #[retry(policy = "availability", across = Self::MODELS)]
    async fn call(&self) -> Result<u32, CallError> {
        Ok(1)
    }
}

fn main() {
    let _ = Client.call();
}
