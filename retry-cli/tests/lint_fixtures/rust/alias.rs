use tokio::time::sleep as pause;

async fn fetch() -> String {
    loop {
        if let Ok(body) = call().await {
            break body;
        }
        pause(WAIT).await;
    }
}
