//! The model-runner boundary: the engine loop hands a backend a batch of sequence chunks
//! (prefill chunks and single decode tokens alike) with their KV page tables, and gets
//! next-token logits back. The CPU backend implements it today; CUDA plugs in later.

pub mod cpu;
pub mod cuda;

use crate::arrivals::Arrivals;
use crate::error::{EngineError, Result};
use crate::spec::{DraftInfo, DraftTree, SpecConfig};

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

/// The outcome of one chunk that wanted logits.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    Logits(Vec<f32>),
    /// The greedy token, picked where the logits are (first maximum on ties, as
    /// `sampling::argmax`).
    Token(u32),
}

/// What the engine knows of a chunk that wants logits, for `Backend::forward_next`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RowHint {
    /// The engine picks the next token by argmax: the backend may answer with it.
    pub greedy: bool,
    /// The token this step picks cannot end the sequence by its length (max_tokens,
    /// max_model_len), so the engine will ask for the next step unless it stops on the
    /// token itself: a backend may start that step early (CUDA run-ahead).
    pub may_continue: bool,
    /// The sequence can end only by its length (EOS ignored, no stop token ids), so
    /// `may_continue` is certain: a step started early is never lost to a stop token. (A
    /// server-side stop string ends a request by cancelling it, which the engine learns one
    /// step late anyway.)
    pub only_length_ends: bool,
}

pub trait Backend: Send {
    /// "cpu", "cuda", ...
    fn name(&self) -> &'static str;
    /// Run one step. Returns one logits row (vocab_size) per chunk with `want_logits`, in order.
    fn forward(&mut self, chunks: &[SeqChunk<'_>]) -> Result<Vec<Vec<f32>>>;
    /// Like `forward`, for the engine loop: `hints` has one per chunk, and a backend may
    /// answer a greedy chunk with its token instead of its logits (the GPU then copies 4
    /// bytes per row to the host instead of 600 KB of Qwen3 logits).
    fn forward_next(&mut self, chunks: &[SeqChunk<'_>], hints: &[RowHint]) -> Result<Vec<Next>> {
        let _ = hints;
        Ok(self.forward(chunks)?.into_iter().map(Next::Logits).collect())
    }
    /// The engine's count of requests on their way in, for a backend that starts steps
    /// before it is asked for them (CUDA run-ahead); others ignore it.
    fn watch_arrivals(&mut self, _arrivals: Arrivals) {}

    /// The tree shape this backend speculates with, None when it runs no draft. The
    /// speculative calls below are made only when this is Some (spec/mod.rs has the order).
    fn spec(&self) -> Option<SpecConfig> {
        None
    }
    /// What /v1/engine/info says of the draft.
    fn draft_info(&self) -> Option<DraftInfo> {
        None
    }
    /// Where the draft's forward runs ("cpu", "cuda"), for /v1/engine/info.
    fn draft_device(&self) -> &'static str {
        "cpu"
    }
    /// One target forward over each row's verify tree: logits at every node, in chunk order.
    /// Writes every node's KV (node i at position `start_pos + i`) and aux hidden states.
    fn verify(&mut self, _rows: &[VerifyRow<'_>]) -> Result<Vec<Vec<Vec<f32>>>> {
        Err(no_draft(self.name()))
    }
    /// `verify` for the engine loop: `greedy` has one flag per row, and a backend may answer
    /// a greedy row's nodes with their greedy tokens instead of their logits (a verify of
    /// 16 Qwen3 nodes is 9.7 MB of logits, 64 bytes of tokens).
    fn verify_next(&mut self, rows: &[VerifyRow<'_>], greedy: &[bool]) -> Result<Vec<Vec<Next>>> {
        let _ = greedy;
        Ok(self.verify(rows)?.into_iter().map(|r| r.into_iter().map(Next::Logits).collect()).collect())
    }
    /// Moves the accepted nodes' KV and aux states to their sequential positions.
    fn keep_path(&mut self, _rows: &[KeepRow<'_>]) -> Result<()> {
        Err(no_draft(self.name()))
    }
    /// The draft's next tree per row (`spec::Draft::propose`, fed this backend's aux states).
    fn propose(&mut self, _rows: &[ProposeRow<'_>]) -> Result<Vec<DraftTree>> {
        Err(no_draft(self.name()))
    }
}

fn no_draft(backend: &str) -> EngineError {
    EngineError::Backend(format!("the {backend} backend runs no speculative draft"))
}

/// A verify tree: `tokens[0]` is the row's last token (the root, no KV yet, at
/// `start_pos`), then the drafted nodes; `parents[i]` is node i's parent chunk index
/// (`parents[0]` unused). Node i's RoPE position is `start_pos + depth(i)`; it sees the
/// sequence's KV before `start_pos` and its own ancestors.
#[derive(Debug, Clone)]
pub struct VerifyRow<'a> {
    pub tokens: &'a [u32],
    pub parents: &'a [usize],
    pub start_pos: usize,
    /// Pages covering positions `0..start_pos + tokens.len()`.
    pub block_table: &'a [u32],
}

/// After a verify: `path` holds the accepted nodes' chunk indices in path order; node
/// `path[d]` moves from position `start_pos + path[d]` to `start_pos + 1 + d`.
#[derive(Debug, Clone)]
pub struct KeepRow<'a> {
    pub path: &'a [usize],
    pub start_pos: usize,
    pub block_table: &'a [u32],
}

/// For `Backend::propose`: the row's tokens (the last one just picked, without KV) and
/// the first draft position the draft has not run.
#[derive(Debug, Clone)]
pub struct ProposeRow<'a> {
    pub tokens: &'a [u32],
    pub draft_from: usize,
    pub block_table: &'a [u32],
}
