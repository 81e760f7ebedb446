use retry_runtime::retry;

#[retry(policy = "availability", attempts = 4)]
async fn fetch(client: &Client) -> Result<String, FetchError> {
    Ok(client.get().await?)
}
