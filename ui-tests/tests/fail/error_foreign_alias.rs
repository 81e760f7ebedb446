use retry_runtime::retry;

// Behind an alias the macro cannot see `E`; the trait's note says how to wrap a foreign type.
type Fallible<T> = Result<T, std::fmt::Error>;

#[retry]
async fn fetch() -> Fallible<u32> {
    Err(std::fmt::Error)
}

fn main() {}
