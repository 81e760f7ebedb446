use retry_runtime::retry;

#[retry]
async fn label() -> Result<impl std::fmt::Display, std::io::Error> {
    Ok("ready")
}

fn main() {}
