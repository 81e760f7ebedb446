use retry_runtime::retry;

// A budget is a duration: `"2"` would be refused in turn.
#[retry(budget = 2)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
