use retry_runtime::retry;

#[retry]
async fn ping(host: &str) {
    let _ = host;
}

fn main() {}
