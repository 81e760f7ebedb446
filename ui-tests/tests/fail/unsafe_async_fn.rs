use retry_runtime::retry;

// The keywords go `async unsafe fn`.
#[retry]
unsafe async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
