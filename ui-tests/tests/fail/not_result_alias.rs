use retry_runtime::retry;

// An alias hides what it is: the type check says so on the alias.
type Count = Option<u32>;

#[retry]
async fn count() -> Count {
    Some(1)
}

fn main() {}
