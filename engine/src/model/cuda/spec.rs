//! The CUDA backend's side of speculative decoding (spec/mod.rs has the whole step): the
//! target's aux hidden states kept by KV slot on the GPU, the verify forward over trees
//! (tree_meta.rs; `ops::tree_attention_into`), moving the accepted nodes' KV and aux into
//! place in one kernel, and the draft: an EAGLE-3 draft runs on the GPU (draft.rs); the
//! test doubles (`spec::self_draft`) run on the host, fed the aux rows they need.

use super::draft::GpuDraft;
use super::meta::{HostMeta, StepMeta};
use super::spec_timing::{Part, SpecTiming};
use super::step::{Scratch, forward_layers};
use super::verify_graph::padded_trees;
use super::weights::GpuLinear;
use super::{CudaBackend, GpuKvCache, driver_err, kernel_err};
use crate::error::{EngineError, Result};
use crate::model::{KeepRow, Next, ProposeRow, VerifyRow};
use crate::spec::{Draft, DraftInfo, DraftTree, SpecConfig};
use crate::weights::Mat;
use kernels::cudarc::driver::{CudaSlice, CudaView, DevicePtr};
use kernels::{Gpu, bf16, ops};

/// The draft's aux input by KV slot: [slots, layers x hidden] bf16, and the table of every
/// per-slot buffer (each layer's K and V, then this) that `ops::slot_rows_move` walks.
pub(super) struct AuxStore {
    buf: CudaSlice<bf16>,
    /// Target layers whose input is captured, in the draft's order (the layer count: the
    /// last layer's output).
    layers: Vec<usize>,
    hidden: usize,
    move_bufs: CudaSlice<u64>,
    move_widths: CudaSlice<i32>,
    max_width: usize,
}

impl AuxStore {
    /// Elements per slot: every captured layer's hidden state.
    pub fn width(&self) -> usize {
        self.layers.len() * self.hidden
    }

    /// [slots, width] bf16: the rows the draft gathers by KV slot.
    pub fn rows(&self) -> &CudaSlice<bf16> {
        &self.buf
    }

    /// Before layer `li` (or after the last: `li` = the layer count), the residual stream
    /// `x` of every token into its slot's aux row, where the draft wants it.
    pub fn store(
        &mut self,
        gpu: &Gpu,
        li: usize,
        x: &CudaSlice<f32>,
        slots: &CudaView<'_, i32>,
    ) -> Result<()> {
        let (w, h) = (self.width(), self.hidden);
        for k in (0..self.layers.len()).filter(|&k| self.layers[k] == li) {
            let mut out = self.buf.as_view_mut();
            ops::aux_store_into(gpu, &x.as_view(), slots, h, &mut out, (w, k * h)).map_err(kernel_err)?;
        }
        Ok(())
    }
}

/// Where the draft runs.
enum Drafter {
    Gpu(Box<GpuDraft>),
    /// A test double, on the host (it reads no embedding).
    Host(Box<dyn Draft>),
}

/// The draft, its tree shape, and what /v1/engine/info says of it.
pub(super) struct CudaSpec {
    drafter: Drafter,
    cfg: SpecConfig,
    info: DraftInfo,
    /// Where the round's time goes (spec_timing.rs; `Tuning::step_timing`).
    pub timing: Option<SpecTiming>,
}

impl CudaSpec {
    pub fn cfg(&self) -> SpecConfig {
        self.cfg
    }
    pub fn info(&self) -> DraftInfo {
        self.info.clone()
    }
    /// "cuda" for an EAGLE-3 draft, "cpu" for a test double.
    pub fn device(&self) -> &'static str {
        match self.drafter {
            Drafter::Gpu(_) => "cuda",
            Drafter::Host(_) => "cpu",
        }
    }
}

impl GpuKvCache {
    /// Adds the aux store for `layers` and the move table over every per-slot buffer.
    fn add_aux(&mut self, gpu: &Gpu, layers: Vec<usize>, hidden: usize) -> Result<()> {
        let s = gpu.stream();
        let slots = (self.num_pages + 1) * self.block_size;
        let width = layers.len() * hidden;
        let buf = s.alloc_zeros::<bf16>(slots * width).map_err(driver_err("alloc aux store"))?;
        let kvd = self.k.first().map_or(0, |k| k.len() / slots);
        let mut ptrs = Vec::with_capacity(2 * self.k.len() + 1);
        for (k, v) in self.k.iter().zip(&self.v) {
            ptrs.push(k.device_ptr(s).0);
            ptrs.push(v.device_ptr(s).0);
        }
        ptrs.push(buf.device_ptr(s).0);
        let mut widths = vec![kvd as i32; 2 * self.k.len()];
        widths.push(width as i32);
        self.aux = Some(AuxStore {
            buf,
            layers,
            hidden,
            move_bufs: s.clone_htod(&ptrs).map_err(driver_err("upload slot buffers"))?,
            move_widths: s.clone_htod(&widths).map_err(driver_err("upload slot widths"))?,
            max_width: kvd.max(width),
        });
        Ok(())
    }
}

impl CudaBackend {
    /// This backend speculating with `draft` under `cfg`, for batches of up to `max_rows`
    /// sequences: aux states are captured from here on (call before
    /// `capture_decode_graphs`, whose graphs then capture them too). An EAGLE-3 draft moves
    /// to the GPU (its host copy is dropped); a test double stays on the host. Tree
    /// attention runs on the tensor-core attention kernel, so the target needs its geometry
    /// (every Qwen3 has it).
    pub fn with_draft(mut self, draft: Box<dyn Draft>, cfg: SpecConfig, max_rows: usize) -> Result<Self> {
        let hidden = self.cfg.hidden_size;
        let layers = crate::spec::aux_layers_of(draft.as_ref(), &self.cfg)?;
        let dims = super::step::attn_dims(&self.cfg);
        if !ops::prefill_attention_supported(dims) {
            return Err(EngineError::BadRequest(format!(
                "speculative decoding on CUDA needs head_dim {} and at most 8 query heads per KV head; the \
                 target has head_dim {} and {}",
                ops::PREFILL_HEAD_DIM,
                dims.head_dim,
                dims.heads / dims.kv_heads
            )));
        }
        if !self.graphs.iter().all(Option::is_none) {
            return Err(EngineError::Backend("attach the draft before capturing decode graphs".into()));
        }
        let info = draft.describe();
        let drafter = match draft.into_eagle3() {
            Ok(e) => {
                let pages = (self.cache.num_pages, self.cache.block_size);
                // The draft takes the target's weight format.
                let fp8 = self.w.layers.first().is_some_and(|l| matches!(l.wqkv, GpuLinear::Fp8 { .. }));
                let d = GpuDraft::upload(&self.gpu, e, (&cfg, fp8), pages, max_rows)?;
                tracing::info!(bytes = d.bytes(), max_rows, fp8, "EAGLE-3 draft on the GPU");
                Drafter::Gpu(Box::new(d))
            }
            Err(host) => Drafter::Host(host),
        };
        self.cache.add_aux(&self.gpu, layers, hidden)?;
        // A step queued ahead would not know of verify steps between decode steps.
        self.run_ahead = false;
        let timing = self.gpu.tuning().step_timing.then(SpecTiming::new);
        self.spec = Some(CudaSpec { drafter, cfg, info, timing });
        Ok(self)
    }

    fn aux_store(&self) -> Result<&AuxStore> {
        self.cache.aux.as_ref().ok_or_else(|| EngineError::Backend("the cuda backend runs no draft".into()))
    }

    /// Every row's nodes' logits, or their greedy tokens when `greedy` (argmax on the GPU:
    /// 4 bytes per node come back instead of a vocabulary of floats).
    pub(super) fn verify_trees(&mut self, rows: &[VerifyRow<'_>], greedy: bool) -> Result<Vec<Vec<Next>>> {
        let began = std::time::Instant::now();
        self.aux_store()?;
        self.ahead = None;
        let (vocab, pages, bs) = (self.cfg.vocab_size, self.cache.num_pages, self.cache.block_size);
        let host = HostMeta::tree_step(rows, vocab, bs, pages)?;
        let nodes = rows.first().map_or(0, |r| r.tokens.len());
        let same_shape = rows.iter().all(|r| r.tokens.len() == nodes);
        // Graphs where every tree has one size and the GEMMs need no dequant buffer (bf16,
        // or FP8 with its bf16 copies kept).
        if self.graphs_enabled && same_shape && self.deq.is_none() && padded_trees(rows.len()).is_some() {
            let mut out = self.verify_with_graph(host, (rows.len(), nodes), greedy, began)?.into_iter();
            return Ok(rows.iter().map(|r| out.by_ref().take(r.tokens.len()).collect()).collect());
        }
        let t = host.ids.len();
        let meta = StepMeta::upload(self.gpu.stream(), &host)?;
        let mut sc = Scratch::for_tree(&self.gpu, &self.cfg, t)?;
        let (gpu, cfg, w) = (&self.gpu, &self.cfg, &self.w);
        forward_layers(gpu, cfg, w, &mut self.cache, &mut sc, &meta, self.deq.as_mut(), false)?;
        let all: Vec<usize> = (0..t).collect();
        let logits = self.logits_of(&sc.h, &all)?;
        let mut out = self.eager_results(&logits, t, greedy)?.into_iter();
        Ok(rows.iter().map(|r| out.by_ref().take(r.tokens.len()).collect()).collect())
    }

    pub(super) fn keep_paths(&mut self, rows: &[KeepRow<'_>]) -> Result<()> {
        let bs = self.cache.block_size;
        let mut pairs = vec![];
        for r in rows {
            let end = r.start_pos + 1 + r.path.iter().copied().max().unwrap_or(0);
            if r.block_table.len() * bs < end
                || r.block_table.iter().any(|&p| p as usize >= self.cache.num_pages)
            {
                return Err(EngineError::BadRequest(format!("block table does not cover {end} positions")));
            }
            let slot = |pos: usize| (r.block_table[pos / bs] as usize * bs + pos % bs) as i32;
            // Nodes come parents first, so node path[d] >= d + 1; the kernel copies in
            // order, so no copy overwrites a source a later one still needs.
            for (d, &node) in r.path.iter().enumerate() {
                let (from, to) = (slot(r.start_pos + node), slot(r.start_pos + 1 + d));
                if from != to {
                    pairs.extend([from, to]);
                }
            }
        }
        if pairs.is_empty() {
            return Ok(());
        }
        self.ahead = None;
        let aux = self.aux_store()?;
        let p = self.gpu.stream().clone_htod(&pairs).map_err(driver_err("upload kept pairs"))?;
        let (bufs, widths) = (aux.move_bufs.as_view(), aux.move_widths.as_view());
        // SAFETY: move_bufs holds this cache's K, V and aux buffers (add_aux), each of
        // (num_pages + 1) x block_size rows of its width, alive as long as the cache; the
        // slots come from tables checked against num_pages above.
        unsafe { ops::slot_rows_move(&self.gpu, &bufs, &widths, aux.max_width, &p.as_view()) }
            .map_err(kernel_err)
    }

    pub(super) fn propose_trees(&mut self, rows: &[ProposeRow<'_>]) -> Result<Vec<DraftTree>> {
        let aux = self
            .cache
            .aux
            .as_ref()
            .ok_or_else(|| EngineError::Backend("the cuda backend runs no draft".into()))?;
        let spec = self.spec.as_mut().ok_or_else(|| EngineError::Backend("no draft".into()))?;
        let draft = match &mut spec.drafter {
            Drafter::Gpu(d) => {
                let gpu = &self.gpu;
                let mut timing = spec.timing.as_mut();
                let call = timing.as_mut().map(|t| t.begin(gpu, Part::Propose)).transpose()?;
                let trees =
                    d.propose(gpu, &self.w.embed, aux, rows, (&spec.cfg, self.graphs_enabled), timing)?;
                if let (Some(t), Some(b)) = (spec.timing.as_mut(), call) {
                    t.end(gpu, b)?;
                    t.settle(gpu)?;
                }
                for t in &trees {
                    t.check()?;
                }
                return Ok(trees);
            }
            Drafter::Host(d) => d,
        };
        let (w, bs, s) = (aux.width(), self.cache.block_size, self.gpu.stream().clone());
        let mut auxes = Vec::with_capacity(rows.len());
        for r in rows {
            let end = r.tokens.len().saturating_sub(1);
            let mut a = Vec::with_capacity(end.saturating_sub(r.draft_from) * w);
            for pos in r.draft_from..end {
                let page = *r.block_table.get(pos / bs).ok_or_else(|| {
                    EngineError::BadRequest(format!("block table does not cover draft position {pos}"))
                })? as usize;
                let slot = page * bs + pos % bs;
                let row = s
                    .clone_dtoh(&aux.buf.slice(slot * w..(slot + 1) * w))
                    .map_err(driver_err("download aux row"))?;
                a.extend(row.iter().map(|v| v.to_f32()));
            }
            auxes.push(a);
        }
        self.gpu.sync().map_err(kernel_err)?;
        let no_embed = Mat { data: vec![], rows: 0, cols: 0, fp8: None };
        crate::spec::propose_checked(draft.as_mut(), &spec.cfg, rows, &auxes, &no_embed)
    }
}
