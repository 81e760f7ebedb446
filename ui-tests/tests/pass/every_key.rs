#![deny(warnings)]

use retry_runtime::{Class, Quota, retry, testing};
use std::time::Duration;

static QUOTA: Quota = Quota::new(500);

use ::retry_runtime as renamed;

#[retry(
    policy = "transient",
    attempts = 4,
    base_ms = 100,
    cap_ms = 250,
    multiplier = 1.5,
    jitter = "none",
    budget = "2s",
    timeout = "1s",
    name = "every_key",
    quota = QUOTA,
    also_retry = [InvalidOutput, QuotaExhausted],
    never_retry = [Timeout, ServerError],
    crate = "renamed",
)]
async fn everything(class: Class) -> Result<(), Class> {
    Err(class)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // 100 ms, then 150, then 225: grown by 1.5, under the 250 ms cap, no jitter.
    let (_, recorded) = testing::scope(everything(Class::InvalidOutput)).await;
    assert_eq!(recorded.waits(), [100, 150, 225].map(Duration::from_millis));
    // Dropped from the list: one attempt.
    let (_, recorded) = testing::scope(everything(Class::Timeout)).await;
    assert!(recorded.waits().is_empty());
}
