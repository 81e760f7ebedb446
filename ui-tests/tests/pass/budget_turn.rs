#![deny(warnings)]

use retry_runtime::{Class, Turn, retry, testing};
use std::time::Duration;

// `budget = "turn"` (the default, spelled out): the enclosing turn bounds the ladder.
#[retry(policy = "outage", budget = "turn")]
async fn wait_out() -> Result<(), Class> {
    Err(Class::Unavailable { retry_after: None })
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let ((_, report), recorded) =
        testing::scope(Turn::new(Duration::from_secs(30)).run(wait_out())).await;
    // 5 s and 15 s fit in 30 s; the 45 s wait would not.
    assert_eq!(recorded.waits(), [5, 15].map(Duration::from_secs));
    assert_eq!(report.attempts(), 3);
}
