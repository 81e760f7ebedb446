use retry_runtime::{Class, Classify, Upstream, retry};

static MODEL: Upstream = Upstream::new("model");

#[derive(Debug)]
struct CallError;

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("call failed")
    }
}

impl Classify for CallError {
    fn classify(&self) -> Class {
        Class::Transport
    }
}

// An attempt the upstream holds back past the call's end must become a `CallError`, and
// nothing says how.
#[retry(policy = "availability", upstream = MODEL)]
async fn call() -> Result<u32, CallError> {
    Ok(1)
}

fn main() {
    let _ = call();
}
