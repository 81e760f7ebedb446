use retry_runtime::retry;

fn main() {
    let call = #[retry] async || Ok::<u32, std::io::Error>(1);
    let _ = call;
}
