async fn engine_wait() {
    // backoff-lint: allow(this is the engine's own wait, computed by the ladder)
    loop {
        if attempt().await.is_ok() {
            break;
        }
        tokio::time::sleep(ladder_wait()).await;
    }
}
