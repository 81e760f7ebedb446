use retry_runtime::{Quota, retry};

// A `const` is a new value at every use, so a quota in one would not be shared: a `static`.
const A_CONST: Quota = Quota::standard();

#[retry(quota = A_CONST)]
async fn fetch() -> Result<u32, std::io::Error> {
    Ok(1)
}

fn main() {}
