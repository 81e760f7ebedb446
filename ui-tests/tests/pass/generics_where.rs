#![deny(warnings)]

use retry_runtime::{Classify, retry, testing};
use std::fmt::{Debug, Display};
use std::io::{Error, ErrorKind};

#[retry(attempts = 2)]
async fn first_of<'a, T, E>(items: &'a [T], fail_with: impl Fn() -> Option<E>) -> Result<&'a T, E>
where
    T: Debug + 'a,
    E: Classify + Display,
{
    if let Some(error) = fail_with() {
        return Err(error);
    }
    Ok(&items[0])
}

struct Wrapper<T>(T);

impl<T: Clone + Send> Wrapper<T> {
    // `Self` in the return type, inside a generic impl.
    #[retry]
    async fn duplicate(&self) -> Result<Self, Error> {
        Ok(Wrapper(self.0.clone()))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let items = [1, 2, 3];
    let (found, _) = testing::scope(first_of(&items, || None::<Error>)).await;
    assert_eq!(*found.unwrap(), 1);
    let (failed, recorded) =
        testing::scope(first_of(&items, || Some(Error::from(ErrorKind::TimedOut)))).await;
    assert_eq!(failed.unwrap_err().kind(), ErrorKind::TimedOut);
    assert!(
        recorded.waits().is_empty(),
        "availability does not retry a timeout"
    );
    assert_eq!(Wrapper(7).duplicate().await.unwrap().0, 7);
}
