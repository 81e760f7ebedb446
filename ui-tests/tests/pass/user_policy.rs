#![deny(warnings)]

use retry_runtime::{Class, Jitter, Policy, Quota, retry, testing};
use std::time::Duration;

mod policies {
    use super::*;

    /// The model's policy: invalid output is worth another try (seed 002).
    pub const MODEL: Policy = Policy::new("model")
        .with_attempts(3)
        .with_base(Duration::from_millis(100))
        .with_jitter(Jitter::None)
        .retrying(Class::InvalidOutput);

    pub static MODEL_QUOTA: Quota = Quota::new(100);
}

#[retry(policy = policies::MODEL, quota = policies::MODEL_QUOTA)]
async fn complete() -> Result<(), Class> {
    Err(Class::InvalidOutput)
}

// The policy's own numbers can still be adjusted.
#[retry(policy = crate::policies::MODEL, attempts = 2)]
async fn complete_once_more() -> Result<(), Class> {
    Err(Class::InvalidOutput)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (_, recorded) = testing::scope(complete()).await;
    assert_eq!(recorded.waits(), [100, 200].map(Duration::from_millis));
    assert_eq!(policies::MODEL_QUOTA.available(), 90);
    let (_, recorded) = testing::scope(complete_once_more()).await;
    assert_eq!(recorded.waits(), [Duration::from_millis(100)]);
}
