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

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Finished {
    pub reason: FinishReason,
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TokenEvent {
    /// The tokens one step generated for the request, in order: one, or with speculative
    /// decoding every accepted token and the bonus (EOS included when it ends the
    /// sequence; nothing past a stop). The last event carries `finished`, so a server can
    /// put `finish_reason` on the chunk of the last tokens without waiting or racing for a
    /// second event.
    Tokens { ids: Vec<u32>, finished: Option<Finished> },
    /// The step running this request failed; the request is over.
    Error(String),
}
