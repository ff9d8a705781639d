//! The CPU reference backend: Qwen3's forward in plain f32, written to be read next to
//! the paper and transformers' modeling_qwen3.py. Every later backend is tested against it.

mod attention;
mod kv_cache;
pub mod ops;
mod span;
mod spec;

use super::{Backend, KeepRow, ProposeRow, SeqChunk, VerifyRow};
use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::fp8;
use crate::weights::ModelWeights;
use attention::{AttnShape, attend};
use kv_cache::KvCache;
use ops::{linear, rms_norm, rope, silu_mul};
use span::Span;
use spec::CpuSpec;

pub struct CpuBackend {
    cfg: ModelConfig,
    w: ModelWeights,
    cache: KvCache,
    /// Round each layer projection's input through e4m3 (`fp8::round_activations`).
    fp8_activations: bool,
    /// The speculative draft and the target's aux hidden states it reads.
    spec: Option<CpuSpec>,
}

impl CpuBackend {
    pub fn new(cfg: ModelConfig, w: ModelWeights, num_pages: usize, block_size: usize) -> Self {
        let cache = KvCache::new(cfg.num_hidden_layers, num_pages, block_size, cfg.kv_dim());
        CpuBackend { cfg, w, cache, fp8_activations: false, spec: None }
    }

    /// This backend with every layer projection's input (q/k/v, o, gate/up, down; not
    /// lm_head) rounded through e4m3 per token and 128-column group, as W8A8 engines run
    /// block-FP8 checkpoints: a reference for what FP8 activations would cost in accuracy
    /// (tests/fp8_accuracy.rs). The serving backends never do this.
    pub fn with_fp8_activations(self) -> Self {
        CpuBackend { fp8_activations: true, ..self }
    }

    /// Logits at every position of `tokens` run from position 0 on pages 0.. (tests and
    /// goldens; the serving path only needs last-token logits).
    pub fn logits_all_positions(&mut self, tokens: &[u32]) -> Result<Vec<Vec<f32>>> {
        let pages = tokens.len().div_ceil(self.cache.block_size);
        if pages > self.cache.num_pages {
            return Err(EngineError::BadRequest(format!("{} tokens need {pages} KV pages", tokens.len())));
        }
        let table: Vec<u32> = (0..pages as u32).collect();
        let chunk = SeqChunk { tokens, start_pos: 0, block_table: &table, want_logits: true };
        let rows: Vec<usize> = (0..tokens.len()).collect();
        self.run(&[Span::chunk(&chunk)], &rows)
    }

    /// Forward all spans' tokens; return logits for the flat token indices in `rows`.
    fn run(&mut self, spans: &[Span<'_>], rows: &[usize]) -> Result<Vec<Vec<f32>>> {
        self.validate(spans)?;
        let hd = self.cfg.hidden_size;
        // 1. The embedding rows start the residual stream.
        let mut x = Vec::new();
        for sp in spans {
            for &t in sp.tokens {
                x.extend_from_slice(&self.w.embed.data[t as usize * hd..][..hd]);
            }
        }
        // 2. The layers, each adding attention and MLP to the residual.
        for li in 0..self.w.layers.len() {
            if let Some(spec) = &mut self.spec {
                spec.capture(li, spans, &x, &self.cache);
            }
            let attn = self.attention(li, spans, &x);
            let lw = &self.w.layers[li];
            let o = linear(&attn, attn.len() / self.cfg.q_dim(), &lw.o_proj);
            x.iter_mut().zip(&o).for_each(|(a, b)| *a += b);
            let down = self.mlp(li, &x);
            x.iter_mut().zip(&down).for_each(|(a, b)| *a += b);
        }
        if let Some(spec) = &mut self.spec {
            spec.capture(self.w.layers.len(), spans, &x, &self.cache);
        }
        // 3. The final norm and lm_head for the rows that want logits.
        let mut last = Vec::with_capacity(rows.len() * hd);
        for &r in rows {
            last.extend_from_slice(&x[r * hd..(r + 1) * hd]);
        }
        rms_norm(&mut last, &self.w.final_norm, self.cfg.rms_norm_eps as f32);
        let logits = linear(&last, rows.len(), self.w.lm_head());
        Ok(logits.chunks_exact(self.cfg.vocab_size).map(|r| r.to_vec()).collect())
    }

    /// A bad id or a short block table is a caller bug that must fail the step before it
    /// touches the cache, not index out of bounds.
    fn validate(&self, spans: &[Span<'_>]) -> Result<()> {
        let vocab = self.cfg.vocab_size;
        for sp in spans {
            if let Some(&bad) = sp.tokens.iter().find(|&&t| t as usize >= vocab) {
                return Err(EngineError::BadRequest(format!("token id {bad} >= vocab_size {vocab}")));
            }
            self.check_table(sp.block_table, sp.start_pos + sp.tokens.len())?;
        }
        Ok(())
    }

    fn check_table(&self, block_table: &[u32], end: usize) -> Result<()> {
        if block_table.len() * self.cache.block_size < end
            || block_table.iter().any(|&p| p as usize >= self.cache.num_pages)
        {
            return Err(EngineError::BadRequest(format!("block table does not cover {end} positions")));
        }
        Ok(())
    }

    /// Rounds v's rows of `cols` through e4m3 when the backend runs FP8 activations.
    fn round(&self, v: &mut [f32], cols: usize) {
        if self.fp8_activations {
            fp8::round_activations(v, cols)
        }
    }

    /// Layer `li`'s attention of the chunks' tokens over residual x: the input norm,
    /// q|k|v, Qwen3's per-head q/k norm and RoPE, the K/V write into the pages, and each
    /// span's attention over its sequence. Returns [tokens, q_dim].
    fn attention(&mut self, li: usize, spans: &[Span<'_>], x: &[f32]) -> Vec<f32> {
        let c = &self.cfg;
        let (hd, qd, kvd, eps) = (c.hidden_size, c.q_dim(), c.kv_dim(), c.rms_norm_eps as f32);
        let shape =
            AttnShape { heads: c.num_attention_heads, kv_heads: c.num_key_value_heads, head_dim: c.head_dim };
        let lw = &self.w.layers[li];
        let t_total = x.len() / hd;
        let mut h = x.to_vec();
        rms_norm(&mut h, &lw.input_norm, eps);
        self.round(&mut h, hd);
        let (mut q, mut k) = (linear(&h, t_total, &lw.q_proj), linear(&h, t_total, &lw.k_proj));
        let v = linear(&h, t_total, &lw.v_proj);
        rms_norm(&mut q, &lw.q_norm, eps);
        rms_norm(&mut k, &lw.k_norm, eps);
        let mut attn = Vec::with_capacity(t_total * qd);
        let mut row = 0;
        for sp in spans {
            for i in 0..sp.tokens.len() {
                let (r, pos) = (row + i, sp.rope_pos(i));
                for head in q[r * qd..(r + 1) * qd].chunks_exact_mut(c.head_dim) {
                    rope(head, pos, c.rope_theta as f32);
                }
                for head in k[r * kvd..(r + 1) * kvd].chunks_exact_mut(c.head_dim) {
                    rope(head, pos, c.rope_theta as f32);
                }
                let slot = self.cache.slot(sp.block_table, sp.kv_pos(i));
                let (kr, vr) = (&k[r * kvd..(r + 1) * kvd], &v[r * kvd..(r + 1) * kvd]);
                self.cache.write(li, slot, kr, vr);
            }
            let n = sp.tokens.len();
            let qs = &q[row * qd..(row + n) * qd];
            let visible: Vec<Vec<usize>> = (0..n).map(|i| sp.visible(i, &self.cache)).collect();
            attn.extend(attend(qs, &visible, &self.cache, li, &shape));
            row += n;
        }
        self.round(&mut attn, qd);
        attn
    }

    /// Layer `li`'s MLP of residual x: the post norm, SwiGLU(gate, up), down.
    fn mlp(&self, li: usize, x: &[f32]) -> Vec<f32> {
        let (hd, eps) = (self.cfg.hidden_size, self.cfg.rms_norm_eps as f32);
        let lw = &self.w.layers[li];
        let t_total = x.len() / hd;
        let mut h = x.to_vec();
        rms_norm(&mut h, &lw.post_norm, eps);
        self.round(&mut h, hd);
        let mut gate = linear(&h, t_total, &lw.gate_proj);
        let up = linear(&h, t_total, &lw.up_proj);
        silu_mul(&mut gate, &up);
        self.round(&mut gate, self.cfg.intermediate_size);
        linear(&gate, t_total, &lw.down_proj)
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn forward(&mut self, chunks: &[SeqChunk<'_>]) -> Result<Vec<Vec<f32>>> {
        let mut rows = Vec::new();
        let mut offset = 0;
        for ch in chunks {
            if ch.want_logits && !ch.tokens.is_empty() {
                rows.push(offset + ch.tokens.len() - 1);
            }
            offset += ch.tokens.len();
        }
        let spans: Vec<Span<'_>> = chunks.iter().map(Span::chunk).collect();
        self.run(&spans, &rows)
    }

    fn spec(&self) -> Option<crate::spec::SpecConfig> {
        self.spec.as_ref().map(|s| s.cfg)
    }

    fn draft_info(&self) -> Option<crate::spec::DraftInfo> {
        self.spec.as_ref().map(|s| s.draft.describe())
    }

    fn verify(&mut self, rows: &[VerifyRow<'_>]) -> Result<Vec<Vec<Vec<f32>>>> {
        self.verify_trees(rows)
    }

    fn keep_path(&mut self, rows: &[KeepRow<'_>]) -> Result<()> {
        self.keep_paths(rows)
    }

    fn propose(&mut self, rows: &[ProposeRow<'_>]) -> Result<Vec<crate::spec::DraftTree>> {
        self.propose_trees(rows)
    }
}

#[cfg(test)]
mod tests;
