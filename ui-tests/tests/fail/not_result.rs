use retry_runtime::retry;

#[retry]
async fn count() -> Option<u32> {
    Some(1)
}

fn main() {}
