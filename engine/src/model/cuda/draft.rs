//! The EAGLE-3 draft on the GPU: the CPU reference's forward (spec/draft/forward.rs) over
//! device buffers (draft_layer.rs), the tree search between levels on the host.
//!
//! One `propose` call, for every row at once:
//! 1. **extend**, a CUDA graph per (batch, positions) that recurs (`Extension`; the first
//!    extension over a whole prompt runs eagerly): the aux rows of the positions the draft
//!    has not seen are gathered by KV slot from the target's aux store, `fc` fuses them,
//!    and the layer runs over them (causal over the row's draft KV); the last position's
//!    top-k starts the search;
//! 2. **levels** 2..=num_steps, each a CUDA graph per batch size (`Level`): the frontier's
//!    nodes run the layer on their parents' output hidden states. Forwarded node f of a row
//!    (f = (level - 2) x topk + its frontier rank) keeps its K/V at draft position lo + f
//!    (lo = tokens - 1, the first uncommitted one) and attends to the positions below lo
//!    and to its ancestors' and its own through the tree mask (`ops::tree_attention_into`,
//!    as the verify); its RoPE position is lo + depth - 1.
//!
//! The draft KV is one layer in the target's page layout: the same page ids name the same
//! positions, in a store of its own. Positions past a row's table (the forwarded nodes can
//! reach past the pages the scheduler gave the row) go to scratch pages after the block
//! manager's, `scratch_pages` per row of the batch.
//!
//! Between levels k (id, log-probability) pairs per node come back to the host (a sync per
//! level); the search (spec/tree.rs) picks the next frontier there.

mod extension;

use super::draft_layer::{DraftWeights, Layer, LayerBufs, LayerRows, dims, zeros};
use super::graph::OwnedGraph;
use super::spec::AuxStore;
use super::spec_timing::{Part, SpecTiming};
use super::step::linear_w;
use super::{driver_err, kernel_err};
use crate::error::{EngineError, Result};
use crate::model::ProposeRow;
use crate::spec::draft::Eagle3Draft;
use crate::spec::draft::config::DraftConfig;
use crate::spec::tree::TreeSearch;
use crate::spec::{DraftTree, SpecConfig};
use extension::{Extension, MAX_GRAPH_EXTENSION, MAX_KEPT_EXTENSIONS};
use kernels::cudarc::driver::CudaSlice;
use kernels::ops;
use kernels::{Gpu, bf16};

/// A tree level's buffers for a batch of `batch` rows (batch x topk inputs), and its graph
/// once captured.
struct Level {
    batch: usize,
    layer: LayerBufs,
    /// Each input's parent row in `GpuDraft::src`.
    parents: CudaSlice<i32>,
    logits: CudaSlice<f32>,
    top_ids: CudaSlice<i32>,
    top_lp: CudaSlice<f32>,
    graph: Option<OwnedGraph>,
}

pub(super) struct GpuDraft {
    c: DraftConfig,
    w: DraftWeights,
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
    topk: usize,
    /// Row r's draft table at r x `stride`: its pages, then its scratch pages.
    tables: CudaSlice<i32>,
    stride: usize,
    /// The levels' parent rows: each row's root hidden (rows 0..batch), then the last
    /// level's outputs.
    src: CudaSlice<f32>,
    levels: Vec<Level>,
    extensions: Vec<Extension>,
}

impl GpuDraft {
    /// `d`'s weights in the target's format (bf16, or FP8 when `fp8`: quantized here) and a zeroed KV store of `num_pages` pages of `block_size`
    /// plus scratch pages for `max_rows` rows of trees under `spec`.
    pub fn upload(
        gpu: &Gpu,
        mut d: Box<Eagle3Draft>,
        (spec, fp8): (&SpecConfig, bool),
        (num_pages, block_size): (usize, usize),
        max_rows: usize,
    ) -> Result<Self> {
        if fp8 {
            d.quantize_fp8()?;
        }
        let (c, w) = (d.config().clone(), d.weights());
        if !ops::prefill_attention_supported(dims(&c)) {
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
        if spec.topk > c.draft_vocab_size {
            return Err(EngineError::BadRequest(format!(
                "--speculative-eagle-topk {} is more than the draft's {} tokens",
                spec.topk, c.draft_vocab_size
            )));
        }
        if let Some(&t) = w.draft_to_target.iter().find(|&&t| t as usize >= c.vocab_size) {
            return Err(EngineError::Weights(format!(
                "draft d2t maps to token {t} >= vocab {}",
                c.vocab_size
            )));
        }
        // A row's forwarded nodes start at most a page into its last page.
        let scratch_pages = forwarded.div_ceil(block_size) + 1;
        let slots = (num_pages + max_rows * scratch_pages) * block_size * c.kv_dim();
        // A row's table never has more entries than there are pages, its own and scratch.
        let stride = num_pages + scratch_pages;
        Ok(GpuDraft {
            k: zeros(gpu, slots)?,
            v: zeros(gpu, slots)?,
            w: DraftWeights::upload(gpu, &c, w)?,
            d2t: w.draft_to_target.clone(),
            tables: zeros(gpu, max_rows * stride)?,
            stride,
            src: zeros(gpu, max_rows * (1 + spec.topk) * c.hidden_size)?,
            c,
            num_pages,
            block_size,
            scratch_pages,
            max_rows,
            forwarded,
            topk: spec.topk,
            levels: vec![],
            extensions: vec![],
        })
    }

    /// Bytes of device memory the draft holds (weights and KV).
    pub fn bytes(&self) -> usize {
        self.w.bytes() + 2 * (self.k.len() + self.v.len())
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
        if (spec.num_steps - 1) * spec.topk > self.forwarded || spec.topk != self.topk {
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
    /// grow the tree level by level (on graphs when `graphs`). `embed` is the target's
    /// embedding on the GPU.
    pub fn propose(
        &mut self,
        gpu: &Gpu,
        embed: &CudaSlice<bf16>,
        aux: &AuxStore,
        rows: &[ProposeRow<'_>],
        (spec, graphs): (&SpecConfig, bool),
        mut timing: Option<&mut SpecTiming>,
    ) -> Result<Vec<DraftTree>> {
        self.check(rows, spec)?;
        if rows.is_empty() {
            return Ok(vec![]);
        }
        let mut ext_part = timing.as_mut().map(|t| t.begin(gpu, Part::Extend)).transpose()?;
        let (bs, topk, batch, stride) = (self.block_size, spec.topk, rows.len(), self.stride);
        let s = gpu.stream().clone();
        let mut tables = vec![0i32; batch * stride];
        for (r, row) in rows.iter().enumerate() {
            let need = (row.tokens.len() - 1 + self.forwarded).div_ceil(bs);
            let scratch = (self.num_pages + r * self.scratch_pages) as i32;
            for (j, t) in tables[r * stride..][..need].iter_mut().enumerate() {
                *t = match row.block_table.get(j) {
                    Some(&p) => p as i32,
                    None => scratch + (j - row.block_table.len()) as i32,
                };
            }
        }
        s.memcpy_htod(&tables, &mut self.tables.slice_mut(..batch * stride))
            .map_err(driver_err("upload draft tables"))?;
        let slot = |r: usize, pos: usize| tables[r * stride + pos / bs] as usize * bs + pos % bs;
        // 1. extend: draft position i holds (aux of target position i, token i + 1).
        let mut ext = LayerRows::default();
        let mut last = Vec::with_capacity(batch);
        for (r, row) in rows.iter().enumerate() {
            for pos in row.draft_from..row.tokens.len() - 1 {
                ext.push(row.tokens[pos + 1], pos, slot(r, pos), r * stride, pos + 1, 0, pos + 1);
            }
            last.push((ext.len() - 1) as i32);
        }
        let shape = (batch, ext.len());
        let keep = graphs && ext.len() <= MAX_GRAPH_EXTENSION;
        let mut e = match self.extensions.iter().position(|e| e.shape == shape) {
            Some(i) if keep => self.extensions.remove(i),
            _ => self.new_extension(gpu, aux.width(), shape)?,
        };
        let ran = (|| {
            e.layer.write(&s, &ext)?;
            // The aux store's slots are the target's: the draft's for positions below lo.
            s.memcpy_htod(ext.slots(), &mut e.aux_slots).map_err(driver_err("upload draft aux slots"))?;
            s.memcpy_htod(&last, &mut e.last).map_err(driver_err("upload draft rows"))?;
            if !keep {
                return self.extension_ops(gpu, embed, aux, &mut e);
            }
            if e.graph.is_none() {
                let g = OwnedGraph::capture(gpu, || self.extension_ops(gpu, embed, aux, &mut e))?;
                tracing::info!(batch, positions = shape.1, "captured draft extension graph");
                e.graph = Some(g);
            }
            let g = e.graph.as_ref().expect("captured above");
            g.0.launch().map_err(driver_err("draft extension graph launch"))
        })();
        if let (Some(t), Some(b)) = (timing.as_mut(), ext_part.as_mut()) {
            t.queued(gpu, b)?;
        }
        let pairs = ran.and_then(|()| self.pairs(gpu, (&e.ids, &e.lp)));
        if keep {
            // A bound on the shapes kept (batch x positions can take ~150 at batch 1-8): the
            // least recently used goes (the list runs from it to the one just used).
            if self.extensions.len() == MAX_KEPT_EXTENSIONS {
                self.extensions.remove(0);
            }
            self.extensions.push(e);
        }
        let mut searches: Vec<TreeSearch> = pairs?.iter().map(|p| TreeSearch::new(topk, p)).collect();
        if let (Some(t), Some(b)) = (timing.as_mut(), ext_part) {
            t.end(gpu, b)?;
        }
        // 2. levels: where each candidate's output hidden sits in `src`, and its forwarded
        // index (its KV position past lo).
        let mut src_row: Vec<Vec<usize>> = vec![vec![]; batch];
        let mut fwd: Vec<Vec<usize>> = vec![vec![]; batch];
        for level in 1..spec.num_steps {
            let mut lr = LayerRows::default();
            let mut parents: Vec<i32> = vec![];
            let mut placed: Vec<Vec<(usize, usize)>> = vec![vec![]; batch];
            for (r, search) in searches.iter().enumerate() {
                let lo = rows[r].tokens.len() - 1;
                let cands = search.candidates();
                fwd[r].resize(cands.len(), usize::MAX);
                for (i, &c) in search.frontier().iter().enumerate() {
                    let f = (level - 1) * topk + i;
                    fwd[r][c] = f;
                    let (mut mask, mut depth, mut at) = (1u64 << f, 1, cands[c].parent);
                    while let Some(p) = at {
                        mask |= 1u64 << fwd[r][p];
                        depth += 1;
                        at = cands[p].parent;
                    }
                    parents.push(match cands[c].parent {
                        None => r as i32,
                        Some(p) => (batch + src_row[r][p]) as i32,
                    });
                    placed[r].push((c, lr.len()));
                    lr.push(
                        cands[c].token,
                        lo + depth - 1,
                        slot(r, lo + f),
                        r * stride,
                        lo,
                        mask,
                        lo + f + 1,
                    );
                }
            }
            let tops = self.run_level(gpu, embed, (batch, graphs), (&lr, &parents), timing.as_deref_mut())?;
            let mut j = 0;
            for (r, search) in searches.iter_mut().enumerate() {
                let n = search.frontier().len();
                let refs: Vec<&[(u32, f32)]> = tops[j..j + n].iter().map(Vec::as_slice).collect();
                search.expand(&refs);
                j += n;
                src_row[r] = vec![usize::MAX; search.candidates().len()];
                for &(c, row) in &placed[r] {
                    src_row[r][c] = row;
                }
            }
        }
        Ok(searches.iter().map(|s| s.select(spec.num_draft_tokens)).collect())
    }

    /// One tree level of `lr`'s inputs (batch x topk of them) on the level's buffers: on
    /// its graph (captured on first use) or eagerly; each input's top-k pairs.
    fn run_level(
        &mut self,
        gpu: &Gpu,
        embed: &CudaSlice<bf16>,
        (batch, graphs): (usize, bool),
        (lr, parents): (&LayerRows, &[i32]),
        mut timing: Option<&mut SpecTiming>,
    ) -> Result<Vec<Vec<(u32, f32)>>> {
        let s = gpu.stream().clone();
        let mut part = timing.as_mut().map(|t| t.begin(gpu, Part::Level)).transpose()?;
        let i = match self.levels.iter().position(|l| l.batch == batch) {
            Some(i) => i,
            None => {
                let n = batch * self.topk;
                self.levels.push(Level {
                    batch,
                    layer: LayerBufs::new(gpu, &self.c, n)?,
                    parents: zeros(gpu, n)?,
                    logits: zeros(gpu, n * self.c.draft_vocab_size)?,
                    top_ids: zeros(gpu, n * self.topk)?,
                    top_lp: zeros(gpu, n * self.topk)?,
                    graph: None,
                });
                self.levels.len() - 1
            }
        };
        // Out of the list while it runs: the level's ops borrow the draft's other buffers.
        let mut lv = self.levels.swap_remove(i);
        let ran = (|| {
            if lr.len() != lv.layer.rows() {
                return Err(EngineError::Backend(format!(
                    "a tree level of {} inputs on buffers for {}",
                    lr.len(),
                    lv.layer.rows()
                )));
            }
            lv.layer.write(&s, lr)?;
            s.memcpy_htod(parents, &mut lv.parents).map_err(driver_err("upload draft parents"))?;
            if !graphs {
                return self.level_ops(gpu, embed, &mut lv);
            }
            let (t, b) = (timing.as_mut(), part.as_mut());
            if lv.graph.is_none() {
                let g = OwnedGraph::capture(gpu, || self.level_ops(gpu, embed, &mut lv))?;
                tracing::info!(batch, "captured draft level graph");
                lv.graph = Some(g);
            }
            let g = lv.graph.as_ref().expect("captured above");
            g.0.launch().map_err(driver_err("draft level graph launch"))?;
            match (t, b) {
                (Some(t), Some(b)) => t.queued(gpu, b),
                _ => Ok(()),
            }
        })()
        .and_then(|()| self.pairs(gpu, (&lv.top_ids, &lv.top_lp)));
        self.levels.push(lv);
        if let (Some(t), Some(b)) = (timing, part) {
            t.end(gpu, b)?;
        }
        ran
    }

    /// A level's kernels: parents' hidden states in, the layer, its outputs kept in `src`
    /// for the next level, lm_head and the top-k.
    fn level_ops(&mut self, gpu: &Gpu, embed: &CudaSlice<bf16>, lv: &mut Level) -> Result<()> {
        let (h, n) = (self.c.hidden_size, lv.layer.rows());
        {
            let mut x = lv.layer.x.as_view_mut();
            ops::rows_gather_into(gpu, &self.src.as_view(), &lv.parents.as_view(), h, &mut x)
                .map_err(kernel_err)?;
        }
        Layer { c: &self.c, w: &self.w, k: &mut self.k, v: &mut self.v, block_size: self.block_size }.run(
            gpu,
            embed,
            &mut lv.layer,
            &self.tables.as_view(),
        )?;
        let at = lv.batch * h;
        gpu.stream()
            .memcpy_dtod(&lv.layer.x, &mut self.src.slice_mut(at..at + n * h))
            .map_err(driver_err("keep draft level outputs"))?;
        self.logits_topk(gpu, &lv.layer.normed, &mut lv.logits, (&mut lv.top_ids, &mut lv.top_lp))
    }

    /// lm_head over the normed rows `h` into `logits`, then each row's top-k ids and
    /// log-probabilities.
    fn logits_topk(
        &self,
        gpu: &Gpu,
        h: &CudaSlice<bf16>,
        logits: &mut CudaSlice<f32>,
        (ids, lp): (&mut CudaSlice<i32>, &mut CudaSlice<f32>),
    ) -> Result<()> {
        let (hd, dv) = (self.c.hidden_size, self.c.draft_vocab_size);
        linear_w(gpu, h, &self.w.lm_head, dv, hd, logits, None)?;
        ops::topk_logprobs_into(
            gpu,
            &logits.as_view(),
            dv,
            self.topk,
            &mut ids.as_view_mut(),
            &mut lp.as_view_mut(),
        )
        .map_err(kernel_err)
    }

    /// The top-k ids and log-probabilities downloaded, as each row's (target id,
    /// log-probability) pairs, best first: all the search reads of a distribution.
    fn pairs(
        &self,
        gpu: &Gpu,
        (ids, lp): (&CudaSlice<i32>, &CudaSlice<f32>),
    ) -> Result<Vec<Vec<(u32, f32)>>> {
        let s = gpu.stream();
        let ids = s.clone_dtoh(ids).map_err(driver_err("download draft top-k"))?;
        let lp = s.clone_dtoh(lp).map_err(driver_err("download draft top-k"))?;
        gpu.sync().map_err(kernel_err)?;
        let k = self.topk;
        Ok(ids
            .chunks_exact(k)
            .zip(lp.chunks_exact(k))
            .map(|(i, l)| i.iter().zip(l).map(|(&d, &p)| (self.d2t[d as usize], p)).collect())
            .collect())
    }
}
