#![deny(warnings)]

// A policy the `impl` owns, named through `Self`, of a plain type and of a generic one, and
// a type parameter's associated policy: built in the function's context, where they can be
// named (a `const` item in the body could not name them, E0401).

use retry_runtime::{Class, Jitter, Policy, Quota, retry, testing};
use std::marker::PhantomData;
use std::time::Duration;

static QUOTA: Quota = Quota::new(100);

struct Client;

impl Client {
    const POLICY: Policy = Policy::new("client")
        .with_attempts(3)
        .with_base(Duration::from_millis(100))
        .with_jitter(Jitter::None);

    #[retry(policy = Self::POLICY)]
    async fn fetch(&self) -> Result<(), Class> {
        Err(Class::Transport)
    }

    // Adjusted, with a quota, a budget and a timeout: the other keys work as with a path.
    #[retry(policy = Self::POLICY, attempts = 2, quota = QUOTA, budget = "1m", timeout = "5s")]
    async fn fetch_once_more(&self) -> Result<(), Class> {
        Err(Class::Transport)
    }
}

trait Tuned {
    const POLICY: Policy;
}

struct Pool<T>(PhantomData<T>);

impl<T> Pool<T> {
    const POLICY: Policy = Client::POLICY.with_base(Duration::from_millis(50));

    #[retry(policy = Self::POLICY)]
    async fn acquire(&self) -> Result<(), Class> {
        Err(Class::Transport)
    }
}

impl Tuned for Client {
    const POLICY: Policy = Client::POLICY.with_attempts(2);
}

#[retry(policy = T::POLICY)]
async fn tuned<T: Tuned>() -> Result<(), Class> {
    Err(Class::Transport)
}

#[retry(policy = <Client as Tuned>::POLICY)]
async fn qualified() -> Result<(), Class> {
    Err(Class::Transport)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (_, recorded) = testing::scope(Client.fetch()).await;
    assert_eq!(recorded.waits(), [100, 200].map(Duration::from_millis));
    let (_, recorded) = testing::scope(Client.fetch_once_more()).await;
    assert_eq!(recorded.waits(), [Duration::from_millis(100)]);
    assert_eq!(QUOTA.available(), 95);
    let (_, recorded) = testing::scope(Pool::<u8>(PhantomData).acquire()).await;
    assert_eq!(recorded.waits(), [50, 100].map(Duration::from_millis));
    let (_, recorded) = testing::scope(tuned::<Client>()).await;
    assert_eq!(recorded.waits(), [Duration::from_millis(100)]);
    let (_, recorded) = testing::scope(qualified()).await;
    assert_eq!(recorded.waits(), [Duration::from_millis(100)]);
}
