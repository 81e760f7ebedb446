// Each wait the lint knows, in a loop that breaks on success.
async fn waits() {
    loop {
        if a().await.is_ok() { break; }
        tokio::time::sleep_until(deadline).await;
    }
    loop {
        if b().await.is_ok() { break; }
        async_std::task::sleep(WAIT).await;
    }
    loop {
        if c().await.is_ok() { break; }
        smol::Timer::after(WAIT).await;
    }
    loop {
        if d().await.is_ok() { break; }
        futures_timer::Delay::new(WAIT).await;
    }
    let mut interval = tokio::time::interval(WAIT);
    loop {
        if e().await.is_ok() { break; }
        interval.tick().await;
    }
}
