use retry_runtime::retry;

// The body hands back a borrow of `buffer` from inside an attempt: each attempt's block would
// need its own `&mut` to the same buffer at once.
#[retry]
async fn fill(buffer: &mut Vec<u8>) -> Result<&mut Vec<u8>, std::io::Error> {
    buffer.push(1);
    Ok(buffer)
}

fn main() {}
