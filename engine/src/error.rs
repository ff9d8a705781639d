//! The engine library's error type: every failure names what it was doing and with what.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("config field `{field}`: {msg}")]
    Config { field: String, msg: String },
    #[error("reading {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("parsing {path}: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("weights: {0}")]
    Weights(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("chat template: {0}")]
    Template(String),
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("backend: {0}")]
    Backend(String),
    #[error("engine is shut down")]
    Shutdown,
    #[error("engine is busy: request queue full")]
    QueueFull,
}

pub type Result<T> = std::result::Result<T, EngineError>;

impl EngineError {
    pub fn config(field: &str, msg: impl Into<String>) -> Self {
        EngineError::Config { field: field.to_string(), msg: msg.into() }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EngineError::Io { path: path.into(), source }
    }
}
