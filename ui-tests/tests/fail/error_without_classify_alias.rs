use retry_runtime::retry;

// An alias names no `E`: the check points at the whole return type.
type Result<T> = std::result::Result<T, String>;

#[retry]
async fn fetch() -> Result<u32> {
    Err("down".to_owned())
}

fn main() {}
