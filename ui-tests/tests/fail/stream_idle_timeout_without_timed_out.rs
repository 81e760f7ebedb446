use retry_runtime::{Class, Classify, Policy, Retry, testing};

#[derive(Debug)]
struct ReadError;

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("read failed")
    }
}

impl Classify for ReadError {
    fn classify(&self) -> Class {
        Class::Transport
    }
}

fn main() {
    // A stall between items must become a `ReadError`, and nothing says how.
    let _stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| async { Ok::<_, ReadError>(testing::stream_of(vec![Ok::<_, ReadError>("hi")])) })
        .idle_timeout(std::time::Duration::from_secs(30));
}
