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

trait HasModel {
    const MODEL: &'static str;
}

// A path through a type parameter is kept by pointer, and must still name an upstream.
#[retry(policy = "availability", upstream = T::MODEL)]
async fn call<T: HasModel>() -> Result<u32, CallError> {
    Ok(1)
}

fn main() {}
