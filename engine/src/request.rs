//! What crosses the channel between HTTP handlers and the engine thread.

use crate::sampling::SamplingParams;
use serde::Serialize;

#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub prompt: Vec<u32>,
    pub params: SamplingParams,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FinishReason {
    /// EOS or a stop token (or, decided by the caller, a stop string).
    Stop,
    /// max_tokens or the model length.
    Length,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum TokenEvent {
    /// One generated token (EOS included when it ends the sequence).
    Token(u32),
    Finished { reason: FinishReason, prompt_tokens: usize, completion_tokens: usize },
    /// The step running this request failed; the request is over.
    Error(String),
}
