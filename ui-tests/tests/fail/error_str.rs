use retry_runtime::retry;

#[retry]
async fn fetch() -> Result<u32, &'static str> {
    Err("down")
}

fn main() {}
