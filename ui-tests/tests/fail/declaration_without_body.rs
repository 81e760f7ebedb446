use retry_runtime::retry;

trait Model {
    #[retry]
    async fn complete(&self) -> Result<String, std::io::Error>;
}

fn main() {}
