mod glob {
    use tokio::time::*;

    async fn poll() {
        while check().await.is_err() {
            sleep(WAIT).await;
        }
    }
}

mod partial {
    use tokio::time;

    async fn poll() {
        loop {
            if check().await.is_ok() {
                break;
            }
            time::sleep(WAIT).await;
        }
    }
}
