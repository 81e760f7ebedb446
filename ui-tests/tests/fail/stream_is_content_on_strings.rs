use retry_runtime::http::CallError;
use retry_runtime::{Policy, Retry, sse, testing};

fn main() {
    // The rule reads server-sent events; these items are text chunks.
    let _stream = Retry::new(&Policy::AVAILABILITY)
        .stream(|_| async { Ok::<_, CallError>(testing::stream_of(vec![Ok::<_, CallError>("hi")])) })
        .commit_when(sse::is_content);
}
