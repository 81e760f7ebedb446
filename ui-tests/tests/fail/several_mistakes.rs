use retry_runtime::retry;

// Every mistake is reported at once, each at its own token.
#[retry(attempts = 0, jiter = "full", policy = "outage", policy = "transient")]
fn fetch() {}

fn main() {}
