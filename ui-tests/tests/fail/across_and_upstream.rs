use retry_runtime::{Class, Upstream, Upstreams, retry};

static CLAUDE: Upstream = Upstream::new("claude");
static GPT: Upstream = Upstream::new("gpt");
static MODELS: Upstreams = Upstreams::new(&[&CLAUDE, &GPT]);

// Two keys say where the attempts go.
#[retry(policy = "availability", upstream = CLAUDE, across = MODELS)]
async fn call() -> Result<u32, Class> {
    Ok(1)
}

// An `Upstream` where an ordered set is wanted.
#[retry(policy = "availability", across = CLAUDE)]
async fn single() -> Result<u32, Class> {
    Ok(1)
}

fn main() {
    let _ = call();
    let _ = single();
}
