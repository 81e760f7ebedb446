use retry_runtime::retry;
use std::future::Future;

#[retry]
fn fetch() -> impl Future<Output = Result<u32, std::io::Error>> {
    async { Ok(1) }
}

fn main() {}
