use retry_runtime::retry;

#[retry]
const fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
