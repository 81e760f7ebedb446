async fn settle() {
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    std::thread::sleep(std::time::Duration::from_millis(10));
}
