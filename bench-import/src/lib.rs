//! Results latlab did not measure itself, turned into runs it can store and chart:
//! vLLM `--save-result` JSON (`vllm_json`), printed "Serving Benchmark Result" blocks
//! (`text_block`), and the seed study document with its commands (`seed_doc`). Pure: no
//! I/O, so the server, tests and the seed regeneration share exactly this code.

pub mod request;
pub mod seed_doc;
pub mod text_block;
pub mod vllm_json;

pub use request::{ImportConfig, ImportFormat, ImportRequest, ImportedRun};
pub use seed_doc::{LadderStep, SeedStudy};

use bench_types::{RequestRecord, Summary};

/// What a bad import file did wrong, with the line when there is one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImportError {
    #[error("line {line}: {message}")]
    At { line: usize, message: String },
    #[error("{0}")]
    Plain(String),
}

impl ImportError {
    pub fn at(line: usize, message: impl Into<String>) -> Self {
        ImportError::At { line, message: message.into() }
    }
    pub fn new(message: impl Into<String>) -> Self {
        ImportError::Plain(message.into())
    }
}

/// One result as a source gave it, before configuration is attached.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub summary: Summary,
    /// Summary fields the source lacked (see `ImportedTarget::missing`).
    pub missing: Vec<String>,
    /// Per-request records, when the source has them (vLLM JSON with `ttfts`/`itls`).
    pub requests: Vec<RequestRecord>,
    /// Model the source names, if any.
    pub model: Option<String>,
    /// `num_prompts` the source names, if any.
    pub num_prompts: Option<u32>,
}
