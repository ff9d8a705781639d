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
    /// One generated token (EOS included when it ends the sequence). The last token carries
    /// `finished` in the same event, so a server can put `finish_reason` on the chunk of the
    /// last token without waiting or racing for a second event.
    Token { id: u32, finished: Option<Finished> },
    /// The step running this request failed; the request is over.
    Error(String),
}
