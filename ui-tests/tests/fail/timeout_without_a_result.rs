use retry_runtime::retry;

// Not a `Result`: there is no error for a timed-out attempt to become.
#[retry(timeout = "30s")]
async fn fetch() -> u32 {
    1
}

fn main() {}
