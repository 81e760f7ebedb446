use retry_runtime::{Class, Classify, Upstream, Upstreams, retry};

static CLAUDE: Upstream = Upstream::new("claude");
static GPT: Upstream = Upstream::new("gpt");
static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);

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

// An attempt every upstream holds back past the call's end must become a `CallError`, and
// nothing says how.
#[retry(policy = "availability", across = MODELS)]
async fn call() -> Result<u32, CallError> {
    Ok(1)
}

fn main() {
    let _ = call();
}
