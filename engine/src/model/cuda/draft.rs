//! The EAGLE-3 draft on the GPU: the CPU reference's forward (spec/draft/forward.rs) over
//! device buffers, the tree search between levels on the host.
//!
//! One `propose` call, for every row at once:
//! 1. **extend**: the aux rows of the positions the draft has not seen are gathered by KV
//!    slot from the target's aux store, `fc` fuses them, and the draft layer runs over them
//!    (causal over the row's draft KV); the last position's top-k starts the search;
//! 2. **levels** 2..=num_steps: the frontier's nodes run the layer on their parents' output
//!    hidden states. Forwarded node f of a row (f = (level - 2) x topk + its frontier rank)
//!    keeps its K/V at draft position lo + f (lo = tokens - 1, the first uncommitted one)
//!    and attends to positions below lo and to its ancestors' and its own through the tree
//!    mask (`ops::tree_attention_into`, as the verify); its RoPE position is lo + depth - 1.
//!
//! The draft KV is one layer in the target's page layout: the same page ids name the same
//! positions, in a store of its own. Positions past a row's table (the forwarded nodes can
//! reach past the pages the scheduler gave the row) go to scratch pages after the block
//! manager's, `scratch_pages` per row of the batch.
//!
//! Between levels k (id, log-probability) pairs per node come back to the host (a sync per
//! level); the search (spec/tree.rs) picks the next frontier there.

use super::spec::AuxStore;
use super::step::linear;
use super::{driver_err, kernel_err};
use crate::error::{EngineError, Result};
use crate::model::ProposeRow;
use crate::spec::draft::Eagle3Draft;
use crate::spec::draft::config::DraftConfig;
use crate::spec::tree::TreeSearch;
use crate::spec::{DraftTree, SpecConfig};
use kernels::cudarc::driver::{CudaSlice, CudaStream, CudaView};
use kernels::ops::{self, AttnDims, Eagle3Norms, PagedAttnArgs};
use kernels::{Gpu, bf16};
use std::sync::Arc;

/// The draft's weights on the GPU: bf16 matrices row-major (q|k|v fused, gate then up
/// fused), f32 norms.
struct Weights {
    fc: CudaSlice<bf16>,
    input_norm: CudaSlice<f32>,
    hidden_norm: CudaSlice<f32>,
    wqkv: CudaSlice<bf16>,
    wo: CudaSlice<bf16>,
    post_norm: CudaSlice<f32>,
    wgu: CudaSlice<bf16>,
    wdown: CudaSlice<bf16>,
    final_norm: CudaSlice<f32>,
    lm_head: CudaSlice<bf16>,
}

pub(super) struct GpuDraft {
    c: DraftConfig,
    w: Weights,
    /// Target id of each draft id.
    d2t: Vec<u32>,
    k: CudaSlice<bf16>,
    v: CudaSlice<bf16>,
    num_pages: usize,
    block_size: usize,
    /// Scratch pages per batch row, and the rows they are there for.
    scratch_pages: usize,
    max_rows: usize,
    /// Most nodes one row forwards in a call: (num_steps - 1) x topk.
    forwarded: usize,
}

/// One layer call's per-row inputs on the host: token, RoPE position, KV slot, the row's
/// table offset, its context length and its tree ints (lo, mask_lo, mask_hi).
#[derive(Default)]
struct LayerRows {
    ids: Vec<u32>,
    positions: Vec<i32>,
    slots: Vec<i32>,
    offs: Vec<i32>,
    ctx: Vec<i32>,
    tree: Vec<i32>,
}

impl LayerRows {
    /// A row at draft position `slot_pos` (its KV goes there), RoPE position `pos`, seeing
    /// the positions below `lo` and those of the mask's bits above it.
    #[allow(clippy::too_many_arguments)]
    fn push(&mut self, id: u32, pos: usize, slot: usize, off: usize, lo: usize, mask: u64, ctx: usize) {
        self.ids.push(id);
        self.positions.push(pos as i32);
        self.slots.push(slot as i32);
        self.offs.push(off as i32);
        self.ctx.push(ctx as i32);
        self.tree.extend([lo as i32, mask as u32 as i32, (mask >> 32) as u32 as i32]);
    }

    fn upload(&self, s: &Arc<CudaStream>) -> Result<LayerDev> {
        let up = driver_err("upload draft layer inputs");
        Ok(LayerDev {
            ids: s.clone_htod(&self.ids).map_err(&up)?,
            positions: s.clone_htod(&self.positions).map_err(&up)?,
            slots: s.clone_htod(&self.slots).map_err(&up)?,
            offs: s.clone_htod(&self.offs).map_err(&up)?,
            ctx: s.clone_htod(&self.ctx).map_err(&up)?,
            tree: s.clone_htod(&self.tree).map_err(&up)?,
        })
    }
}

struct LayerDev {
    ids: CudaSlice<u32>,
    positions: CudaSlice<i32>,
    slots: CudaSlice<i32>,
    offs: CudaSlice<i32>,
    ctx: CudaSlice<i32>,
    tree: CudaSlice<i32>,
}

fn upload<T: kernels::cudarc::driver::DeviceRepr>(
    gpu: &Gpu,
    what: &'static str,
    v: &[T],
) -> Result<CudaSlice<T>> {
    gpu.stream().clone_htod(v).map_err(driver_err(what))
}

fn zeros<T: kernels::cudarc::driver::DeviceRepr + kernels::cudarc::driver::ValidAsZeroBits>(
    gpu: &Gpu,
    n: usize,
) -> Result<CudaSlice<T>> {
    gpu.stream().alloc_zeros::<T>(n).map_err(driver_err("alloc draft buffer"))
}

fn bf16s(m: &[&crate::weights::Mat]) -> Vec<bf16> {
    m.iter().flat_map(|m| m.data.iter().map(|&v| bf16::from_f32(v))).collect()
}

impl GpuDraft {
    /// `d`'s weights in bf16 and a zeroed KV store of `num_pages` pages of `block_size`
    /// plus scratch pages for `max_rows` rows of trees under `spec`.
    pub fn upload(
        gpu: &Gpu,
        d: &Eagle3Draft,
        spec: &SpecConfig,
        (num_pages, block_size): (usize, usize),
        max_rows: usize,
    ) -> Result<Self> {
        let (c, w) = (d.config().clone(), d.weights());
        let dims =
            AttnDims { heads: c.num_attention_heads, kv_heads: c.num_key_value_heads, head_dim: c.head_dim };
        if !ops::prefill_attention_supported(dims) {
            return Err(EngineError::BadRequest(format!(
                "the CUDA draft attends with the tree-attention kernel, which needs head_dim {}; the draft has {} \
                 ({} heads over {} KV heads)",
                ops::PREFILL_HEAD_DIM,
                c.head_dim,
                c.num_attention_heads,
                c.num_key_value_heads
            )));
        }
        let forwarded = (spec.num_steps - 1) * spec.topk;
        if forwarded > ops::MAX_TREE_NODES {
            return Err(EngineError::BadRequest(format!(
                "the CUDA draft runs at most {} nodes per tree ((--speculative-num-steps - 1) x \
                 --speculative-eagle-topk); {} x {} is {forwarded}",
                ops::MAX_TREE_NODES,
                spec.num_steps - 1,
                spec.topk
            )));
        }
        if let Some(&t) = w.draft_to_target.iter().find(|&&t| t as usize >= c.vocab_size) {
            return Err(EngineError::Weights(format!(
                "draft d2t maps to token {t} >= vocab {}",
                c.vocab_size
            )));
        }
        let up = |what, v: Vec<bf16>| upload(gpu, what, &v);
        let weights = Weights {
            fc: up("upload draft fc", bf16s(&[&w.fc]))?,
            input_norm: upload(gpu, "upload draft norms", &w.input_norm)?,
            hidden_norm: upload(gpu, "upload draft norms", &w.hidden_norm)?,
            wqkv: up("upload draft q|k|v", bf16s(&[&w.q_proj, &w.k_proj, &w.v_proj]))?,
            wo: up("upload draft o_proj", bf16s(&[&w.o_proj]))?,
            post_norm: upload(gpu, "upload draft norms", &w.post_norm)?,
            wgu: up("upload draft gate|up", bf16s(&[&w.gate_proj, &w.up_proj]))?,
            wdown: up("upload draft down_proj", bf16s(&[&w.down_proj]))?,
            final_norm: upload(gpu, "upload draft norms", &w.final_norm)?,
            lm_head: up("upload draft lm_head", bf16s(&[&w.lm_head]))?,
        };
        // A row's forwarded nodes start at most a page into its last page.
        let scratch_pages = forwarded.div_ceil(block_size) + 1;
        let slots = (num_pages + max_rows * scratch_pages) * block_size * c.kv_dim();
        Ok(GpuDraft {
            k: zeros(gpu, slots)?,
            v: zeros(gpu, slots)?,
            d2t: w.draft_to_target.clone(),
            c,
            w: weights,
            num_pages,
            block_size,
            scratch_pages,
            max_rows,
            forwarded,
        })
    }

    fn dims(&self) -> AttnDims {
        AttnDims {
            heads: self.c.num_attention_heads,
            kv_heads: self.c.num_key_value_heads,
            head_dim: self.c.head_dim,
        }
    }

    /// Bytes of device memory the draft holds (weights and KV).
    pub fn bytes(&self) -> usize {
        let w = &self.w;
        let mats =
            [&w.fc, &w.wqkv, &w.wo, &w.wgu, &w.wdown, &w.lm_head].iter().map(|m| m.len()).sum::<usize>();
        2 * (mats + self.k.len() + self.v.len())
    }

    /// A caller's mistake fails the call before any KV is written.
    fn check(&self, rows: &[ProposeRow<'_>], spec: &SpecConfig) -> Result<()> {
        if rows.len() > self.max_rows {
            return Err(EngineError::Backend(format!(
                "{} draft rows; the CUDA draft has scratch for {}",
                rows.len(),
                self.max_rows
            )));
        }
        if (spec.num_steps - 1) * spec.topk > self.forwarded || spec.topk > self.c.draft_vocab_size {
            return Err(EngineError::Backend(format!("the CUDA draft was not built for {spec:?}")));
        }
        for (r, row) in rows.iter().enumerate() {
            let n = row.tokens.len();
            let bad = |m: String| Err(EngineError::Backend(format!("draft row {r}: {m}")));
            if n < 2 || row.draft_from >= n - 1 {
                return bad(format!("{n} tokens and draft_from {}: nothing to extend over", row.draft_from));
            }
            if let Some(&t) =
                row.tokens[row.draft_from + 1..].iter().find(|&&t| t as usize >= self.c.vocab_size)
            {
                return bad(format!("token id {t} >= vocab_size {}", self.c.vocab_size));
            }
            let (bs, pages) = (self.block_size, self.num_pages);
            if row.block_table.len() * bs < n - 1 || row.block_table.iter().any(|&p| p as usize >= pages) {
                return bad(format!("block table does not cover {} draft positions", n - 1));
            }
        }
        Ok(())
    }

    /// Every row's next tree: extend the draft KV over the positions it has not seen, then
    /// grow the tree level by level. `embed` is the target's embedding on the GPU.
    pub fn propose(
        &mut self,
        gpu: &Gpu,
        embed: &CudaSlice<bf16>,
        aux: &AuxStore,
        rows: &[ProposeRow<'_>],
        spec: &SpecConfig,
    ) -> Result<Vec<DraftTree>> {
        self.check(rows, spec)?;
        if rows.is_empty() {
            return Ok(vec![]);
        }
        let (bs, h, topk) = (self.block_size, self.c.hidden_size, spec.topk);
        // Each row's draft table: its pages, then its scratch pages where they end.
        let mut tables: Vec<i32> = vec![];
        let mut offs = Vec::with_capacity(rows.len());
        for (r, row) in rows.iter().enumerate() {
            offs.push(tables.len());
            let need = (row.tokens.len() - 1 + self.forwarded).div_ceil(bs);
            let scratch = (self.num_pages + r * self.scratch_pages) as i32;
            tables.extend((0..need).map(|j| match row.block_table.get(j) {
                Some(&p) => p as i32,
                None => scratch + (j - row.block_table.len()) as i32,
            }));
        }
        let slot = |r: usize, pos: usize| tables[offs[r] + pos / bs] as usize * bs + pos % bs;
        // 1. extend: draft position i holds (aux of target position i, token i + 1).
        let mut ext = LayerRows::default();
        let mut last = Vec::with_capacity(rows.len());
        for (r, row) in rows.iter().enumerate() {
            for pos in row.draft_from..row.tokens.len() - 1 {
                ext.push(row.tokens[pos + 1], pos, slot(r, pos), offs[r], pos + 1, 0, pos + 1);
            }
            last.push((ext.ids.len() - 1) as i32);
        }
        let tables_d = upload(gpu, "upload draft tables", &tables)?;
        let ext_d = ext.upload(gpu.stream())?;
        let aw = aux.width();
        let mut a = zeros::<bf16>(gpu, ext.ids.len() * aw)?;
        {
            // The aux store's slots are the target's: the same numbering for positions < lo.
            let (src, mut out) = (aux.rows(), a.as_view_mut());
            ops::rows_gather_into(gpu, &src.as_view(), &ext_d.slots.as_view(), aw, &mut out)
                .map_err(kernel_err)?;
        }
        let mut x = zeros::<f32>(gpu, ext.ids.len() * h)?;
        linear(gpu, &a, &self.w.fc, h, aw, &mut x)?;
        let normed = self.layer(gpu, embed, &mut x, &ext_d, &tables_d.as_view())?;
        let last_d = upload(gpu, "upload draft rows", &last)?;
        let mut root_h = zeros::<bf16>(gpu, rows.len() * h)?;
        ops::rows_gather_into(gpu, &normed.as_view(), &last_d.as_view(), h, &mut root_h.as_view_mut())
            .map_err(kernel_err)?;
        let mut searches: Vec<TreeSearch> =
            self.top_pairs(gpu, &root_h, topk)?.iter().map(|p| TreeSearch::new(topk, p)).collect();
        // 2. levels: where each candidate's output hidden sits in `prev`, and its forwarded
        // index (its KV position past lo).
        let mut prev = x;
        let mut prev_row: Vec<Vec<usize>> = vec![vec![]; rows.len()];
        let mut fwd: Vec<Vec<usize>> = vec![vec![]; rows.len()];
        for level in 1..spec.num_steps {
            let mut lr = LayerRows::default();
            let mut parents: Vec<i32> = vec![];
            let mut placed: Vec<Vec<(usize, usize)>> = vec![vec![]; rows.len()];
            for (r, s) in searches.iter().enumerate() {
                let lo = rows[r].tokens.len() - 1;
                let cands = s.candidates();
                fwd[r].resize(cands.len(), usize::MAX);
                for (i, &c) in s.frontier().iter().enumerate() {
                    let f = (level - 1) * topk + i;
                    fwd[r][c] = f;
                    let (mut mask, mut depth, mut at) = (1u64 << f, 1, cands[c].parent);
                    while let Some(p) = at {
                        mask |= 1u64 << fwd[r][p];
                        depth += 1;
                        at = cands[p].parent;
                    }
                    parents.push(match cands[c].parent {
                        None => last[r],
                        Some(p) => prev_row[r][p] as i32,
                    });
                    placed[r].push((c, lr.ids.len()));
                    lr.push(cands[c].token, lo + depth - 1, slot(r, lo + f), offs[r], lo, mask, lo + f + 1);
                }
            }
            let lr_d = lr.upload(gpu.stream())?;
            let parents_d = upload(gpu, "upload draft parents", &parents)?;
            let mut x = zeros::<f32>(gpu, lr.ids.len() * h)?;
            ops::rows_gather_into(gpu, &prev.as_view(), &parents_d.as_view(), h, &mut x.as_view_mut())
                .map_err(kernel_err)?;
            let normed = self.layer(gpu, embed, &mut x, &lr_d, &tables_d.as_view())?;
            let tops = self.top_pairs(gpu, &normed, topk)?;
            let mut j = 0;
            for (r, s) in searches.iter_mut().enumerate() {
                let n = s.frontier().len();
                let refs: Vec<&[(u32, f32)]> = tops[j..j + n].iter().map(Vec::as_slice).collect();
                s.expand(&refs);
                j += n;
                prev_row[r] = vec![usize::MAX; s.candidates().len()];
                for &(c, row) in &placed[r] {
                    prev_row[r][c] = row;
                }
            }
            prev = x;
        }
        Ok(searches.iter().map(|s| s.select(spec.num_draft_tokens)).collect())
    }

    /// The draft layer over `x` (its hidden inputs, f32 [rows, hidden]; the output hidden
    /// states on return, before `norm`); returns them after `norm` in bf16.
    fn layer(
        &mut self,
        gpu: &Gpu,
        embed: &CudaSlice<bf16>,
        x: &mut CudaSlice<f32>,
        m: &LayerDev,
        tables: &CudaView<'_, i32>,
    ) -> Result<CudaSlice<bf16>> {
        let (c, dims) = (&self.c, self.dims());
        let (h, inter, eps) = (c.hidden_size, c.intermediate_size, c.rms_norm_eps as f32);
        let (qd, kvd, rows) = (dims.q_dim(), dims.kv_dim(), m.ids.len());
        let ke = kernel_err;
        let mut xcat = zeros::<bf16>(gpu, rows * 2 * h)?;
        let norms = Eagle3Norms {
            input_norm: &self.w.input_norm.as_view(),
            hidden_norm: &self.w.hidden_norm.as_view(),
            eps,
            norm_residual: c.norm_before_residual,
        };
        ops::eagle3_input_into(
            gpu,
            &m.ids.as_view(),
            &embed.as_view(),
            &norms,
            &mut x.as_view_mut(),
            &mut xcat.as_view_mut(),
        )
        .map_err(ke)?;
        let mut qkv = zeros::<f32>(gpu, rows * (qd + 2 * kvd))?;
        linear(gpu, &xcat, &self.w.wqkv, qd + 2 * kvd, 2 * h, &mut qkv)?;
        let mut q = zeros::<bf16>(gpu, rows * qd)?;
        {
            let (mut kc, mut vc) = (self.k.as_view_mut(), self.v.as_view_mut());
            let at = (&m.positions.as_view(), &m.slots.as_view());
            ops::rope_kv_into(
                gpu,
                dims,
                &qkv.as_view(),
                at,
                c.rope_theta as f32,
                &mut q.as_view_mut(),
                (&mut kc, &mut vc),
            )
            .map_err(ke)?;
        }
        let mut attn = zeros::<bf16>(gpu, rows * qd)?;
        let pa = PagedAttnArgs {
            q: &q.as_view(),
            k_cache: &self.k.as_view(),
            v_cache: &self.v.as_view(),
            tables,
            table_offs: &m.offs.as_view(),
            ctx_lens: &m.ctx.as_view(),
            block_size: self.block_size,
            settled: false,
        };
        ops::tree_attention_into(gpu, dims, &pa, &m.tree.as_view(), &mut attn.as_view_mut()).map_err(ke)?;
        let mut o = zeros::<f32>(gpu, rows * h)?;
        linear(gpu, &attn, &self.w.wo, h, qd, &mut o)?;
        let mut normed = zeros::<bf16>(gpu, rows * h)?;
        let post = self.w.post_norm.as_view();
        ops::add_rmsnorm_into(gpu, &mut x.as_view_mut(), &o.as_view(), &post, eps, &mut normed.as_view_mut())
            .map_err(ke)?;
        let mut gu = zeros::<f32>(gpu, rows * 2 * inter)?;
        linear(gpu, &normed, &self.w.wgu, 2 * inter, h, &mut gu)?;
        let mut act = zeros::<bf16>(gpu, rows * inter)?;
        ops::swiglu_into(gpu, &gu.as_view(), inter, false, &mut act.as_view_mut()).map_err(ke)?;
        linear(gpu, &act, &self.w.wdown, h, inter, &mut o)?;
        let fin = self.w.final_norm.as_view();
        ops::add_rmsnorm_into(gpu, &mut x.as_view_mut(), &o.as_view(), &fin, eps, &mut normed.as_view_mut())
            .map_err(ke)?;
        Ok(normed)
    }

    /// lm_head over the normed rows `h`, then each row's `k` best (target id,
    /// log-probability) pairs, best first: all the search reads of a distribution.
    fn top_pairs(&self, gpu: &Gpu, h: &CudaSlice<bf16>, k: usize) -> Result<Vec<Vec<(u32, f32)>>> {
        let (hd, dv) = (self.c.hidden_size, self.c.draft_vocab_size);
        let rows = h.len() / hd;
        let mut logits = zeros::<f32>(gpu, rows * dv)?;
        linear(gpu, h, &self.w.lm_head, dv, hd, &mut logits)?;
        let (mut ids, mut lp) = (zeros::<i32>(gpu, rows * k)?, zeros::<f32>(gpu, rows * k)?);
        ops::topk_logprobs_into(gpu, &logits.as_view(), dv, k, &mut ids.as_view_mut(), &mut lp.as_view_mut())
            .map_err(kernel_err)?;
        let s = gpu.stream();
        let ids = s.clone_dtoh(&ids).map_err(driver_err("download draft top-k"))?;
        let lp = s.clone_dtoh(&lp).map_err(driver_err("download draft top-k"))?;
        gpu.sync().map_err(kernel_err)?;
        Ok((0..rows)
            .map(|r| (0..k).map(|j| (self.d2t[ids[r * k + j] as usize], lp[r * k + j])).collect())
            .collect())
    }
}
