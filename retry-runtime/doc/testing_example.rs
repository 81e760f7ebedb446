use retry_runtime::{Policy, Retry, StopReason, testing};
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // A port where nothing listens: each connection is refused, for real, at once.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);

    let connect = Retry::new(&Policy::AVAILABILITY).named("connect");
    let (result, recorded) =
        testing::scope(connect.run(async |_| tokio::net::TcpStream::connect(address).await)).await;

    // Four real attempts; the three waits the ladder chose were recorded, not slept.
    let gave_up = result.unwrap_err();
    assert_eq!(gave_up.reason(), StopReason::Exhausted { attempts: 4 });
    assert_eq!(recorded.waits(), [250, 500, 1000].map(Duration::from_millis));
}
