use retry_runtime::retry;

#[retry]
struct Client {
    url: String,
}

fn main() {}
