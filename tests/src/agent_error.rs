use retry_runtime::Classify;
use retry_runtime::http::CallError;

#[derive(Debug, thiserror::Error, Classify)]
pub enum AgentError {
    #[error(transparent)]
    #[classify(from)] // every failure of the call and its stream, as classified
    Call(#[from] CallError),
    #[error("the reply is not the JSON asked for")]
    #[classify(invalid_output)]
    NotJson,
}
