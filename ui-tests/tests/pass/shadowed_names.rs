#![deny(warnings)]
#![allow(dead_code)]

// The expansion names everything by absolute path: none of these local names may capture it.
mod core {}
mod std {}
mod retry_runtime {}
struct Run;
struct Retry;
struct Policy;
struct ControlFlow;
struct TimedRetry;
struct TimedOut;
const __RETRY: () = ();
type Result<T> = ::std::result::Result<T, ::std::io::Error>;
type Option<T> = ::std::result::Result<T, ()>;

use ::retry_runtime::retry;

#[retry(policy = "transient", budget = "1m", attempts = 2)]
async fn fetch(n: u32) -> Result<u32> {
    Ok(n)
}

#[retry(policy = "transient", timeout = "30s")]
async fn fetch_timed(n: u32) -> Result<u32> {
    Ok(n)
}

#[retry]
async fn fetch_generic<T: Clone>(value: T) -> Result<T> {
    Ok(value.clone())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(fetch(7).await.unwrap(), 7);
    assert_eq!(fetch_timed(8).await.unwrap(), 8);
    assert_eq!(fetch_generic("x").await.unwrap(), "x");
}
