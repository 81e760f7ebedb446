async fn fetch() -> Result<String, std::io::Error> {
    loop {
        match call().await {
            Ok(body) => return Ok(body),
            Err(_) => tokio::time::sleep(std::time::Duration::from_secs(1)).await,
        }
    }
}
