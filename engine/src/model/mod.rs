//! The model-runner boundary: the engine loop hands a backend a batch of sequence chunks
//! (prefill chunks and single decode tokens alike) with their KV page tables, and gets
//! next-token logits back. The CPU backend implements it today; CUDA plugs in later.

pub mod cpu;
pub mod cuda;

use crate::error::Result;

/// New tokens of one sequence to run through the model.
#[derive(Debug, Clone)]
pub struct SeqChunk<'a> {
    /// Tokens at positions `start_pos..start_pos + tokens.len()`.
    pub tokens: &'a [u32],
    pub start_pos: usize,
    /// KV page ids holding positions `0..start_pos + tokens.len()`, in order.
    pub block_table: &'a [u32],
    /// Whether the caller needs logits for the chunk's last token (false for a
    /// non-final prefill chunk).
    pub want_logits: bool,
}

pub trait Backend: Send {
    /// "cpu", "cuda", ...
    fn name(&self) -> &'static str;
    /// Run one step. Returns one logits row (vocab_size) per chunk with `want_logits`, in order.
    fn forward(&mut self, chunks: &[SeqChunk<'_>]) -> Result<Vec<Vec<f32>>>;
}
