use retry_runtime::retry;

// `connect` can be called once, and every attempt calls it.
#[retry]
async fn open(connect: impl FnOnce() -> Result<u32, std::io::Error>) -> Result<u32, std::io::Error> {
    connect()
}

fn main() {}
