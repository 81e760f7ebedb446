use retry_runtime::Classify;

#[derive(Debug, thiserror::Error, Classify)]
#[error("upload failed: {source}")]
struct UploadError {
    #[from]
    source: std::io::Error,
}

fn main() {}
