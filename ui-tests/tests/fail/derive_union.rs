use retry_runtime::Classify;

#[derive(Classify)]
union Failure {
    code: u16,
    errno: i32,
}

fn main() {}
