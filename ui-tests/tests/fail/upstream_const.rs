use retry_runtime::{Class, Classify, Upstream, UpstreamPaused, retry};

// A `const` is a new value at every use, so an upstream in one would share nothing: its pause
// and its gate would be each call's own. A `static`.
const MODEL: Upstream = Upstream::new("model");

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

#[retry(policy = "availability", upstream = MODEL)]
async fn call() -> Result<u32, CallError> {
    Ok(1)
}

fn main() {
    let _ = call();
}
