//! The draft's forward in plain f32, to be read next to SGLang's
//! python/sglang/srt/models/llama_eagle3.py (`LlamaDecoderLayer.forward`, `LlamaModel.forward`)
//! and vLLM's vllm/model_executor/models/llama_eagle3.py.
//!
//! One input is (hidden [H], token, position):
//! - hidden is `fc(aux)` for a committed position (the three captured target states), or
//!   the parent node's output hidden inside the tree (SGLang applies `fc` only when the
//!   width is not H);
//! - q/k/v read cat[input_layernorm(embed(token)), hidden_norm(hidden)]; Llama attention: no
//!   q/k norm, RoPE at the draft position;
//! - the residual is the raw hidden input (vLLM's `norm_before_residual` makes it the normed
//!   one); then o_proj + residual, post_attention_layernorm, SwiGLU MLP, + residual;
//! - that sum is the output hidden the next tree level reads (SGLang: "we capture the hidden
//!   state before norm"); `norm` then `lm_head` give the draft-vocabulary logits.

use super::Eagle3Draft;
use crate::error::{EngineError, Result};
use crate::model::cpu::ops::{dot, linear, rms_norm, rope, silu_mul};
use crate::spec::tree::{TreeSearch, top_tokens};
use crate::spec::{Draft, DraftRow, DraftTree, SpecConfig};
use crate::weights::Mat;
use rayon::prelude::*;

/// q and k after RoPE, v, and the residual of a batch of inputs, row-major.
struct Projected {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    residual: Vec<f32>,
}

/// One row's tree while it is drafted: the search, and what each forwarded (frontier)
/// candidate left behind for its children.
struct RowTree {
    search: TreeSearch,
    /// The last committed draft position (tokens - 2): its output is the root's.
    last: usize,
    root_hidden: Vec<f32>,
    /// Output hidden of each forwarded candidate, by candidate index.
    hidden: Vec<Option<Vec<f32>>>,
    /// K and V of each forwarded candidate, by candidate index (the scratch memory).
    kv: Vec<Option<(Vec<f32>, Vec<f32>)>>,
}

impl RowTree {
    /// The candidate's ancestors below the root, root-most first.
    fn ancestors(&self, c: usize) -> Vec<usize> {
        let cands = self.search.candidates();
        let mut chain = vec![];
        let mut at = cands[c].parent;
        while let Some(p) = at {
            chain.push(p);
            at = cands[p].parent;
        }
        chain.reverse();
        chain
    }
}

impl Eagle3Draft {
    pub(super) fn propose_rows(
        &mut self,
        rows: &[DraftRow<'_>],
        cfg: &SpecConfig,
        embed: &Mat,
    ) -> Result<Vec<DraftTree>> {
        self.check_rows(rows, cfg, embed)?;
        if rows.is_empty() {
            return Ok(vec![]);
        }
        let (root_hidden, root_dists) = self.extend(rows, embed);
        let (h, dv) = (self.cfg.hidden_size, self.cfg.draft_vocab_size);
        let map = &self.w.draft_to_target;
        let mut trees: Vec<RowTree> = rows
            .iter()
            .enumerate()
            .map(|(r, row)| RowTree {
                search: TreeSearch::new(
                    cfg.topk,
                    &top_tokens(&root_dists[r * dv..][..dv], cfg.topk, |d| map[d]),
                ),
                last: row.tokens.len() - 2,
                root_hidden: root_hidden[r * h..][..h].to_vec(),
                hidden: vec![],
                kv: vec![],
            })
            .collect();
        for _ in 1..cfg.num_steps {
            self.tree_level(rows, &mut trees, embed, cfg.topk);
        }
        Ok(trees.iter().map(|t| t.search.select(cfg.num_draft_tokens)).collect())
    }

    /// A caller's mistake fails the call before any KV is written.
    fn check_rows(&self, rows: &[DraftRow<'_>], cfg: &SpecConfig, embed: &Mat) -> Result<()> {
        let c = &self.cfg;
        if embed.rows != c.vocab_size || embed.cols != c.hidden_size {
            return Err(EngineError::Backend(format!(
                "draft: the target embedding is [{}, {}], the draft needs [{}, {}]",
                embed.rows, embed.cols, c.vocab_size, c.hidden_size
            )));
        }
        if cfg.topk > c.draft_vocab_size {
            return Err(EngineError::BadRequest(format!(
                "--speculative-eagle-topk {} is more than the draft's {} tokens",
                cfg.topk, c.draft_vocab_size
            )));
        }
        let aux_width = self.aux_width();
        for (r, row) in rows.iter().enumerate() {
            let n = row.tokens.len();
            let bad = |m: String| Err(EngineError::Backend(format!("draft row {r}: {m}")));
            if n < 2 || row.draft_from >= n - 1 {
                return bad(format!(
                    "{n} tokens and draft_from {}: the draft extends over draft_from..tokens-1, which is empty",
                    row.draft_from
                ));
            }
            let want = (n - 1 - row.draft_from) * aux_width;
            if row.aux.len() != want {
                return bad(format!(
                    "{} aux floats for positions {}..{} of {aux_width} each, expected {want}",
                    row.aux.len(),
                    row.draft_from,
                    n - 1
                ));
            }
            if let Some(&t) = row.tokens[row.draft_from + 1..].iter().find(|&&t| t as usize >= c.vocab_size) {
                return bad(format!("token id {t} >= vocab_size {}", c.vocab_size));
            }
            if !self.kv.covers(row.block_table, n - 1) {
                return bad(format!("block table does not cover {} draft positions", n - 1));
            }
        }
        Ok(())
    }

    /// Extend every row's draft KV over its new positions (aux of target position i, token
    /// i + 1 at draft position i); returns the output hidden and the draft log-probabilities
    /// at each row's last position, row after row.
    fn extend(&mut self, rows: &[DraftRow<'_>], embed: &Mat) -> (Vec<f32>, Vec<f32>) {
        let (mut aux, mut tokens, mut positions, mut owner) = (vec![], vec![], vec![], vec![]);
        for (r, row) in rows.iter().enumerate() {
            aux.extend_from_slice(row.aux);
            for i in row.draft_from..row.tokens.len() - 1 {
                tokens.push(row.tokens[i + 1]);
                positions.push(i);
                owner.push(r);
            }
        }
        let hidden = linear(&aux, tokens.len(), &self.w.fc);
        let p = self.project(&hidden, &tokens, &positions, embed);
        let kvd = self.cfg.kv_dim();
        for (j, (&r, &pos)) in owner.iter().zip(&positions).enumerate() {
            let slot = self.kv.slot(rows[r].block_table, pos);
            self.kv.write(slot, &p.k[j * kvd..][..kvd], &p.v[j * kvd..][..kvd]);
        }
        let qd = self.cfg.q_dim();
        let kv = &self.kv;
        let attn: Vec<f32> = (0..tokens.len())
            .into_par_iter()
            .flat_map_iter(|j| {
                let table = rows[owner[j]].block_table;
                let ctx: Vec<_> = (0..=positions[j]).map(|pos| kv.read(kv.slot(table, pos))).collect();
                self.attend(&p.q[j * qd..][..qd], &ctx)
            })
            .collect();
        let out = self.finish(&attn, p.residual);
        // Each row's inputs end with its last position.
        let h = self.cfg.hidden_size;
        let mut last = Vec::with_capacity(rows.len() * h);
        for (j, &r) in owner.iter().enumerate() {
            if owner.get(j + 1) != Some(&r) {
                last.extend_from_slice(&out[j * h..][..h]);
            }
        }
        let dists = self.log_probs(&last);
        (last, dists)
    }

    /// One tree level: every row's frontier nodes run at the position after their parent's,
    /// attending to the row's committed draft KV, their ancestors' scratch KV and their own;
    /// their distributions expand the search.
    fn tree_level(&self, rows: &[DraftRow<'_>], trees: &mut [RowTree], embed: &Mat, topk: usize) {
        let (h, kvd, qd, dv) =
            (self.cfg.hidden_size, self.cfg.kv_dim(), self.cfg.q_dim(), self.cfg.draft_vocab_size);
        let (mut hidden, mut tokens, mut positions, mut nodes) = (vec![], vec![], vec![], vec![]);
        for (r, t) in trees.iter().enumerate() {
            for &c in t.search.frontier() {
                let cand = &t.search.candidates()[c];
                let parent_hidden = match cand.parent {
                    None => &t.root_hidden,
                    Some(p) => t.hidden[p].as_ref().expect("a parent was on the frontier, so it ran"),
                };
                hidden.extend_from_slice(parent_hidden);
                tokens.push(cand.token);
                positions.push(t.last + 1 + t.ancestors(c).len());
                nodes.push((r, c));
            }
        }
        let p = self.project(&hidden, &tokens, &positions, embed);
        for (j, &(r, c)) in nodes.iter().enumerate() {
            let t = &mut trees[r];
            let need = t.search.candidates().len();
            t.kv.resize(need, None);
            t.hidden.resize(need, None);
            t.kv[c] = Some((p.k[j * kvd..][..kvd].to_vec(), p.v[j * kvd..][..kvd].to_vec()));
        }
        let kv = &self.kv;
        let trees_ref = &*trees;
        let attn: Vec<f32> = nodes
            .par_iter()
            .enumerate()
            .flat_map_iter(|(j, &(r, c))| {
                let t = &trees_ref[r];
                let table = rows[r].block_table;
                let mut ctx: Vec<(&[f32], &[f32])> =
                    (0..=t.last).map(|pos| kv.read(kv.slot(table, pos))).collect();
                for a in t.ancestors(c).into_iter().chain([c]) {
                    let (k, v) = t.kv[a].as_ref().expect("ancestors ran before their children");
                    ctx.push((k, v));
                }
                self.attend(&p.q[j * qd..][..qd], &ctx)
            })
            .collect();
        let out = self.finish(&attn, p.residual);
        let dists = self.log_probs(&out);
        let map = &self.w.draft_to_target;
        let mut j = 0;
        for t in trees.iter_mut() {
            let frontier = t.search.frontier().to_vec();
            for (i, &c) in frontier.iter().enumerate() {
                t.hidden[c] = Some(out[(j + i) * h..][..h].to_vec());
            }
            let tops: Vec<Vec<(u32, f32)>> = (0..frontier.len())
                .map(|i| top_tokens(&dists[(j + i) * dv..][..dv], topk, |d| map[d]))
                .collect();
            let refs: Vec<&[(u32, f32)]> = tops.iter().map(Vec::as_slice).collect();
            t.search.expand(&refs);
            j += frontier.len();
        }
    }

    /// The midlayer up to attention for inputs (hidden, token, position), one per row.
    fn project(&self, hidden: &[f32], tokens: &[u32], positions: &[usize], embed: &Mat) -> Projected {
        let (c, w) = (&self.cfg, &self.w);
        let (h, eps, n) = (c.hidden_size, c.rms_norm_eps as f32, tokens.len());
        let mut embeds = Vec::with_capacity(n * h);
        for &t in tokens {
            embeds.extend_from_slice(&embed.data[t as usize * h..][..h]);
        }
        rms_norm(&mut embeds, &w.input_norm, eps);
        let mut normed = hidden.to_vec();
        rms_norm(&mut normed, &w.hidden_norm, eps);
        let residual = if c.norm_before_residual { normed.clone() } else { hidden.to_vec() };
        // torch.cat([embeds, hidden_states], dim=-1)
        let mut x = Vec::with_capacity(n * 2 * h);
        for r in 0..n {
            x.extend_from_slice(&embeds[r * h..][..h]);
            x.extend_from_slice(&normed[r * h..][..h]);
        }
        let (mut q, mut k, v) =
            (linear(&x, n, &w.q_proj), linear(&x, n, &w.k_proj), linear(&x, n, &w.v_proj));
        let (qd, kvd, theta) = (c.q_dim(), c.kv_dim(), c.rope_theta as f32);
        for (r, &pos) in positions.iter().enumerate() {
            for head in q[r * qd..(r + 1) * qd].chunks_exact_mut(c.head_dim) {
                rope(head, pos, theta);
            }
            for head in k[r * kvd..(r + 1) * kvd].chunks_exact_mut(c.head_dim) {
                rope(head, pos, theta);
            }
        }
        Projected { q, k, v, residual }
    }

    /// Softmax attention of one query row over its context's (K, V) rows, heads grouped
    /// over the KV heads.
    fn attend(&self, q: &[f32], ctx: &[(&[f32], &[f32])]) -> Vec<f32> {
        let c = &self.cfg;
        let (d, group) = (c.head_dim, c.num_attention_heads / c.num_key_value_heads);
        let scale = 1.0 / (d as f32).sqrt();
        let mut out = vec![0f32; c.q_dim()];
        for (head, o) in out.chunks_exact_mut(d).enumerate() {
            let kv_off = head / group * d;
            let qh = &q[head * d..][..d];
            let mut scores: Vec<f32> = ctx.iter().map(|(k, _)| dot(qh, &k[kv_off..][..d]) * scale).collect();
            let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0f32;
            for s in scores.iter_mut() {
                *s = (*s - max).exp();
                sum += *s;
            }
            for (s, (_, v)) in scores.iter().zip(ctx) {
                let wgt = s / sum;
                for (oi, vi) in o.iter_mut().zip(&v[kv_off..][..d]) {
                    *oi += wgt * vi;
                }
            }
        }
        out
    }

    /// o_proj, the residual, post_attention_layernorm, the MLP and the residual again: the
    /// output hidden states (before `norm`).
    fn finish(&self, attn: &[f32], mut residual: Vec<f32>) -> Vec<f32> {
        let (c, w) = (&self.cfg, &self.w);
        let n = residual.len() / c.hidden_size;
        let o = linear(attn, n, &w.o_proj);
        residual.iter_mut().zip(&o).for_each(|(a, b)| *a += b);
        let mut x = residual.clone();
        rms_norm(&mut x, &w.post_norm, c.rms_norm_eps as f32);
        let mut gate = linear(&x, n, &w.gate_proj);
        let up = linear(&x, n, &w.up_proj);
        silu_mul(&mut gate, &up);
        let down = linear(&gate, n, &w.down_proj);
        residual.iter_mut().zip(&down).for_each(|(a, b)| *a += b);
        residual
    }

    /// `norm`, `lm_head` and a log-softmax over the draft vocabulary, per row.
    fn log_probs(&self, hidden: &[f32]) -> Vec<f32> {
        let (c, w) = (&self.cfg, &self.w);
        let n = hidden.len() / c.hidden_size;
        let mut x = hidden.to_vec();
        rms_norm(&mut x, &w.final_norm, c.rms_norm_eps as f32);
        let mut logits = linear(&x, n, &w.lm_head);
        for row in logits.chunks_exact_mut(c.draft_vocab_size) {
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let lse = max + row.iter().map(|&v| (v - max).exp()).sum::<f32>().ln();
            row.iter_mut().for_each(|v| *v -= lse);
        }
        logits
    }
}
