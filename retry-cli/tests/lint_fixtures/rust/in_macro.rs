// A loop inside a macro's input is tokens, not Rust syntax, until the macro is expanded: not seen.
async fn raced() {
    tokio::select! {
        _ = async { loop { if call().await.is_ok() { break; } tokio::time::sleep(WAIT).await; } } => {}
        _ = shutdown() => {}
    }
}
