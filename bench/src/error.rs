//! Errors of the library. Failed *requests* are not errors: they are counted and kept in
//! the report. These are the reasons a whole run cannot start or finish.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("invalid run spec: {0}")]
    InvalidSpec(String),
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot load tokenizer {path}: {message}")]
    Tokenizer { path: PathBuf, message: String },
    #[error("dataset {path}: {message}")]
    Dataset { path: PathBuf, message: String },
    #[error("cannot build the HTTP client: {0}")]
    Http(String),
    #[error("the run was cancelled")]
    Cancelled,
    /// `--ready-check-timeout-sec`: the first prompt never succeeded in time; nothing was
    /// measured.
    #[error(
        "the target did not answer the first prompt within {waited_s} s (ready check); last error: {last_error}"
    )]
    NotReady { waited_s: f64, last_error: String },
    /// Cancelled while measuring, after some requests had finished: the report covers
    /// those (requests still in flight are not counted), with a note saying so.
    #[error("the run was cancelled after {} of {} requests", .0.requests.len(), .0.spec.num_prompts)]
    CancelledPartway(Box<bench_types::BenchReport>),
}

impl BenchError {
    pub(crate) fn dataset(path: &std::path::Path, message: impl Into<String>) -> Self {
        BenchError::Dataset { path: path.to_path_buf(), message: message.into() }
    }
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        BenchError::Io { path: path.to_path_buf(), source }
    }
}
