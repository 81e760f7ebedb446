use retry_runtime::retry;

async fn send(body: String) -> Result<usize, std::io::Error> {
    Ok(body.len())
}

// The body gives `body` away: a second attempt would have nothing to send.
#[retry]
async fn upload(body: String) -> Result<usize, std::io::Error> {
    send(body).await
}

fn main() {}
