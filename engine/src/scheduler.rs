//! Continuous-batching scheduler with chunked prefill (nano-vllm's shape, tensor-free).
//!
//! Every sequence is "tokens, of which the first `num_computed` have KV in cache"; a step
//! runs some pending tokens of some sequences under a token budget. A decode is a chunk of
//! one token, a prefill is a chunk of many: the model runner sees one uniform batch.
//! Running decodes go first (they are latency-critical), then unfinished prefills, then new
//! sequences are admitted. When KV pages run out, the newest running sequence is preempted
//! (pages freed, recomputed later from its tokens, which is exact).

use crate::block_manager::BlockManager;
use std::collections::VecDeque;

pub type SeqId = u64;

#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    pub max_batch: usize,
    /// Token budget of one step (bounds prefill chunk size and step latency).
    pub max_batched_tokens: usize,
    /// KV positions a decode writes from its token on (speculative decoding verifies a
    /// tree of this many nodes, vLLM's "lookahead slots"); 0 means the one token.
    pub lookahead: usize,
}

#[derive(Debug)]
pub struct Seq {
    pub id: SeqId,
    pub tokens: Vec<u32>,
    pub num_computed: usize,
    pub block_table: Vec<u32>,
}

impl Seq {
    pub fn new(id: SeqId, prompt: Vec<u32>) -> Self {
        Seq { id, tokens: prompt, num_computed: 0, block_table: vec![] }
    }
    pub fn pending(&self) -> usize {
        self.tokens.len() - self.num_computed
    }
}

/// Tokens `start..start + len` of sequence `seq_id` run this step; `sample` when the chunk
/// reaches the end of the sequence's tokens (a next token is due).
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    pub seq_id: SeqId,
    pub start: usize,
    pub len: usize,
    pub sample: bool,
}

pub struct Scheduler {
    cfg: SchedulerConfig,
    bm: BlockManager,
    waiting: VecDeque<Seq>,
    running: Vec<Seq>,
    preemptions: u64,
}

impl Scheduler {
    pub fn new(cfg: SchedulerConfig, bm: BlockManager) -> Self {
        Scheduler { cfg, bm, waiting: VecDeque::new(), running: vec![], preemptions: 0 }
    }

    pub fn add(&mut self, seq: Seq) {
        self.waiting.push_back(seq);
    }
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }
    pub fn num_running(&self) -> usize {
        self.running.len()
    }
    pub fn num_waiting(&self) -> usize {
        self.waiting.len()
    }
    pub fn block_manager(&self) -> &BlockManager {
        &self.bm
    }
    pub fn preemptions(&self) -> u64 {
        self.preemptions
    }

    pub fn get(&self, id: SeqId) -> Option<&Seq> {
        self.running.iter().chain(self.waiting.iter()).find(|s| s.id == id)
    }
    pub fn get_mut(&mut self, id: SeqId) -> Option<&mut Seq> {
        self.running.iter_mut().chain(self.waiting.iter_mut()).find(|s| s.id == id)
    }
    pub fn ids(&self) -> Vec<SeqId> {
        self.running.iter().chain(self.waiting.iter()).map(|s| s.id).collect()
    }

    /// Remove a sequence wherever it is (finished or cancelled) and free its pages.
    pub fn remove(&mut self, id: SeqId) -> Option<Seq> {
        let mut seq = if let Some(i) = self.running.iter().position(|s| s.id == id) {
            self.running.remove(i)
        } else {
            let i = self.waiting.iter().position(|s| s.id == id)?;
            self.waiting.remove(i)?
        };
        self.bm.release(&mut seq.block_table);
        Some(seq)
    }

    /// Plan one step. Pages for every returned chunk are allocated.
    pub fn schedule(&mut self) -> Vec<Chunk> {
        let mut budget = self.cfg.max_batched_tokens;
        let mut chunks: Vec<Chunk> = vec![];
        // Decodes first, then continuing prefills, in admission order.
        for decode_pass in [true, false] {
            let mut i = 0;
            while i < self.running.len() && budget > 0 {
                let s = &self.running[i];
                if (s.pending() == 1) != decode_pass || chunks.iter().any(|c| c.seq_id == s.id) {
                    i += 1;
                    continue;
                }
                let len = s.pending().min(budget);
                let room = if decode_pass { len.max(self.cfg.lookahead) } else { len };
                if !self.make_room(i, s.num_computed + room, &chunks) {
                    continue; // sequence i itself was preempted; i now names the next one
                }
                let s = &mut self.running[i];
                assert!(
                    self.bm.grow(&mut s.block_table, s.num_computed + room),
                    "make_room guaranteed pages"
                );
                chunks.push(Chunk { seq_id: s.id, start: s.num_computed, len, sample: len == s.pending() });
                budget -= len;
                i += 1;
            }
        }
        // Admit waiting sequences (FIFO) while the batch, the budget and free pages allow.
        while budget > 0 && self.running.len() < self.cfg.max_batch {
            let Some(s) = self.waiting.front() else { break };
            let len = s.pending().min(budget);
            if !self.bm.can_grow(&s.block_table, s.num_computed + len) {
                break;
            }
            let mut s = self.waiting.pop_front().expect("front exists");
            assert!(self.bm.grow(&mut s.block_table, s.num_computed + len));
            chunks.push(Chunk { seq_id: s.id, start: s.num_computed, len, sample: len == s.pending() });
            budget -= len;
            self.running.push(s);
        }
        chunks
    }

    /// Free pages until running[i] can hold `tokens` positions, preempting the newest running
    /// sequences not already in this step. Returns false if running[i] itself was preempted.
    fn make_room(&mut self, i: usize, tokens: usize, chunks: &[Chunk]) -> bool {
        while !self.bm.can_grow(&self.running[i].block_table, tokens) {
            let victim = (0..self.running.len())
                .rev()
                .find(|&j| !chunks.iter().any(|c| c.seq_id == self.running[j].id))
                .expect("running[i] itself is never in chunks yet");
            let mut v = self.running.remove(victim);
            self.bm.release(&mut v.block_table);
            v.num_computed = 0;
            self.waiting.push_front(v);
            self.preemptions += 1;
            if victim == i {
                return false;
            }
        }
        true
    }

    /// Speculative decoding: `n` more of the sequence's tokens have KV in cache (the
    /// accepted nodes, moved after the verified root).
    pub fn advance(&mut self, id: SeqId, n: usize) {
        if let Some(s) = self.running.iter_mut().find(|s| s.id == id) {
            s.num_computed += n;
        }
    }

    /// After the backend ran `chunks`: their tokens now have KV in cache.
    pub fn commit(&mut self, chunks: &[Chunk]) {
        for c in chunks {
            if let Some(s) = self.running.iter_mut().find(|s| s.id == c.seq_id) {
                debug_assert_eq!(s.num_computed, c.start);
                s.num_computed += c.len;
            }
        }
    }
}

#[cfg(test)]
mod tests;
