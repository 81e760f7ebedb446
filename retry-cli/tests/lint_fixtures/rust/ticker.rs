async fn flush_every_second(buffer: Buffer) {
    let mut interval = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        interval.tick().await;
        buffer.flush().await;
    }
}
