//! The CUDA backend: Qwen3's forward on one GPU in bf16 (or FP8 block-scaled) weights with f32 residual stream and
//! accumulation, a paged bf16 KV cache in the CPU backend's layout, and every op a kernel
//! from the `kernels` crate. Tested op by op and end to end against the CPU reference
//! (tests/cuda_backend.rs, `#[ignore = "gpu"]`, run on the GPU machine).

mod draft;
mod draft_layer;
mod graph;
mod meta;
mod prefill_copy;
mod run_ahead;
mod spec;
mod spec_timing;
mod step;
mod step_timing;
mod tree_meta;
mod verify_graph;
mod weights;

use super::{Backend, KeepRow, Next, ProposeRow, RowHint, SeqChunk, VerifyRow};
use crate::arrivals::Arrivals;
use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::spec::{DraftInfo, DraftTree, SpecConfig};
use crate::weights::ModelWeights;
use kernels::cudarc::driver::CudaSlice;
use kernels::{Gpu, GpuOptions, bf16};
use weights::GpuWeights;

pub use graph::{GRAPH_BATCHES, MAX_GRAPH_ROWS, graph_sizes};
pub use kernels::gpu::cuda_available;
pub use step::DecodePath;

/// Per layer K and V caches, each [num_pages * block_size, kv_dim] bf16.
pub(crate) struct GpuKvCache {
    pub k: Vec<CudaSlice<bf16>>,
    pub v: Vec<CudaSlice<bf16>>,
    pub block_size: usize,
    pub num_pages: usize,
    /// The draft's aux input by slot, when the backend speculates (spec.rs).
    aux: Option<spec::AuxStore>,
}

impl GpuKvCache {
    /// Zeroed K and V caches of `num_pages` pages of `block_size` slots per layer, and one
    /// page more than the block manager knows of: decode graphs park padding rows there.
    fn new(gpu: &Gpu, cfg: &ModelConfig, num_pages: usize, block_size: usize) -> Result<Self> {
        let slots = (num_pages + 1) * block_size * cfg.kv_dim();
        let alloc = |what| gpu.stream().alloc_zeros::<bf16>(slots).map_err(driver_err(what));
        let mut cache = GpuKvCache {
            k: Vec::with_capacity(cfg.num_hidden_layers),
            v: Vec::with_capacity(cfg.num_hidden_layers),
            block_size,
            num_pages,
            aux: None,
        };
        for _ in 0..cfg.num_hidden_layers {
            cache.k.push(alloc("alloc K cache")?);
            cache.v.push(alloc("alloc V cache")?);
        }
        Ok(cache)
    }
}

pub struct CudaBackend {
    gpu: Gpu,
    cfg: ModelConfig,
    w: GpuWeights,
    cache: GpuKvCache,
    /// Decode steps replay CUDA graphs (graph.rs; `Tuning::graphs`).
    graphs_enabled: bool,
    graphs: Vec<Option<graph::DecodeGraph>>,
    /// Verify steps' graphs by (padded trees, nodes per tree) (verify_graph.rs).
    verify_graphs: Vec<verify_graph::VerifyGraph>,
    /// FP8 models: bf16 buffer for the largest projection, which prefill expands into.
    deq: Option<CudaSlice<bf16>>,
    /// Where decode steps' time goes (step_timing.rs; `Tuning::step_timing`).
    step_timing: Option<step_timing::StepTiming>,
    /// Greedy decode steps may queue the next step before they return (graph.rs,
    /// run_ahead.rs; `Tuning::run_ahead`).
    run_ahead: bool,
    /// The step queued ahead, if any.
    ahead: Option<run_ahead::Ahead>,
    /// Decode calls whose step had been queued ahead (tests see run-ahead work).
    ahead_hits: u64,
    /// Requests on their way into the engine (run-ahead launches no step early while one
    /// is); none until the engine loop hands its count over.
    arrivals: Arrivals,
    /// The draft when this backend speculates (spec.rs).
    spec: Option<spec::CudaSpec>,
}

pub(crate) fn driver_err(what: &'static str) -> impl Fn(kernels::cudarc::driver::DriverError) -> EngineError {
    move |e| EngineError::Backend(format!("{what}: {e}"))
}

pub(crate) fn kernel_err(e: kernels::KernelError) -> EngineError {
    EngineError::Backend(e.to_string())
}

impl CudaBackend {
    /// Compile/load the kernels, upload `w` as bf16 and allocate the KV pages.
    pub fn new(
        cfg: ModelConfig,
        w: &ModelWeights,
        num_pages: usize,
        block_size: usize,
        opts: &GpuOptions,
    ) -> Result<Self> {
        let started = std::time::Instant::now();
        let gpu = Gpu::new(opts).map_err(kernel_err)?;
        let kernels_s = started.elapsed().as_secs_f64();
        let weights = GpuWeights::upload(&gpu, w)?;
        let deq = match weights.fp8_dequant_len() {
            0 => None,
            n => Some(gpu.stream().alloc_zeros(n).map_err(driver_err("alloc FP8 prefill buffer"))?),
        };
        let cache = GpuKvCache::new(&gpu, &cfg, num_pages, block_size)?;
        gpu.sync().map_err(kernel_err)?;
        tracing::info!(
            gpu = gpu.name(),
            arch = gpu.arch(),
            decode_copies_gb = weights.decode_copy_bytes() as f64 / 1e9,
            kernels_s,
            upload_s = started.elapsed().as_secs_f64() - kernels_s,
            "CUDA backend ready"
        );
        let t = gpu.tuning();
        let step_timing = match t.step_timing {
            true => Some(step_timing::StepTiming::new(&gpu)?),
            false => None,
        };
        Ok(CudaBackend {
            gpu,
            cfg,
            w: weights,
            cache,
            graphs_enabled: t.graphs,
            graphs: graph::GRAPH_BATCHES.iter().map(|_| None).collect(),
            verify_graphs: vec![],
            deq,
            step_timing,
            run_ahead: t.run_ahead,
            ahead: None,
            ahead_hits: 0,
            arrivals: Arrivals::default(),
            spec: None,
        })
    }

    /// Keep a bf16 copy of every FP8 projection for prefill (prefill_copy.rs) and free the
    /// scratch buffer it no longer needs; returns the bytes the copies take (0 for bf16
    /// models).
    pub fn keep_fp8_prefill_copies(&mut self) -> Result<usize> {
        let bytes = prefill_copy::make_copies(&self.gpu, &self.cfg, &mut self.w)?;
        if self.w.fp8_dequant_len() == 0 {
            self.deq = None;
        }
        Ok(bytes)
    }

    /// Turn decode graphs on or off (tests compare both paths).
    pub fn set_graphs(&mut self, on: bool) {
        self.graphs_enabled = on;
    }

    /// Turn run-ahead on or off (tests compare both).
    pub fn set_run_ahead(&mut self, on: bool) {
        self.run_ahead = on;
    }

    /// Decode calls so far whose step run-ahead had already queued.
    pub fn ahead_hits(&self) -> u64 {
        self.ahead_hits
    }

    /// The layout each layer projection's decode GEMM reads, layer by layer (wqkv, wo,
    /// wgu, wdown): lets tests see that `Tuning::tiled_weights` reached the weights.
    pub fn decode_layouts(&self) -> Vec<kernels::ops::WeightLayout> {
        self.w
            .layers
            .iter()
            .flat_map(|l| [&l.wqkv, &l.wo, &l.wgu, &l.wdown])
            .map(|w| w.decode_layout())
            .collect()
    }

    /// Whether a decode step of `rows` rows folds its norms into the FP8 GEMMs
    /// (step/fold.rs) or runs them on f16 x (step/half_x.rs): lets tests see which path a
    /// batch takes.
    pub fn decode_path(&self, rows: usize) -> DecodePath {
        let hd = self.cfg.hidden_size;
        let folds = step::folds_norms(&self.w, rows, hd);
        DecodePath { folds_norms: folds, f16_x: step::uses_f16_x(&self.w, rows, hd, folds) }
    }

    /// The device's name, e.g. "NVIDIA H200" (for /v1/engine/info).
    pub fn gpu_name(&self) -> &str {
        self.gpu.name()
    }

    /// What this backend runs with (for /v1/engine/info): the tuning it was built with,
    /// graphs and run-ahead as they are now.
    pub fn tuning(&self) -> kernels::Tuning {
        kernels::Tuning { graphs: self.graphs_enabled, run_ahead: self.run_ahead, ..self.gpu.tuning() }
    }

    /// Logits at every position of `tokens` run from position 0 on pages 0.. (tests).
    pub fn logits_all_positions(&mut self, tokens: &[u32]) -> Result<Vec<Vec<f32>>> {
        let pages = tokens.len().div_ceil(self.cache.block_size);
        let table: Vec<u32> = (0..pages as u32).collect();
        let chunk = SeqChunk { tokens, start_pos: 0, block_table: &table, want_logits: true };
        let rows: Vec<usize> = (0..tokens.len()).collect();
        logits_only(self.run(&[chunk], &rows, RowHint::default())?)
    }

    /// The flat token index of each chunk that wants logits, and whether all of them are
    /// greedy and may continue (`RowHint`; a missing hint is neither).
    fn wanted_rows(chunks: &[SeqChunk<'_>], hints: &[RowHint]) -> (Vec<usize>, RowHint) {
        let (mut rows, mut all, mut offset) =
            (Vec::new(), RowHint { greedy: true, may_continue: true, only_length_ends: true }, 0);
        for (i, ch) in chunks.iter().enumerate() {
            if ch.want_logits && !ch.tokens.is_empty() {
                rows.push(offset + ch.tokens.len() - 1);
                let h = hints.get(i).copied().unwrap_or_default();
                all.greedy &= h.greedy;
                all.may_continue &= h.may_continue;
                all.only_length_ends &= h.only_length_ends;
            }
            offset += ch.tokens.len();
        }
        (rows, all)
    }
}

fn logits_only(v: Vec<Next>) -> Result<Vec<Vec<f32>>> {
    v.into_iter()
        .map(|n| match n {
            Next::Logits(l) => Ok(l),
            Next::Token(_) => Err(EngineError::Backend("asked for logits, got a token".into())),
        })
        .collect()
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn forward(&mut self, chunks: &[SeqChunk<'_>]) -> Result<Vec<Vec<f32>>> {
        let (rows, _) = Self::wanted_rows(chunks, &[]);
        logits_only(self.run(chunks, &rows, RowHint::default())?)
    }

    fn forward_next(&mut self, chunks: &[SeqChunk<'_>], hints: &[RowHint]) -> Result<Vec<Next>> {
        let (rows, mut all) = Self::wanted_rows(chunks, hints);
        all.greedy &= !rows.is_empty();
        // From here `may_continue` means: queue the next step (graph.rs).
        all.may_continue = self.run_ahead && run_ahead::queues(&all);
        self.run(chunks, &rows, all)
    }

    fn watch_arrivals(&mut self, arrivals: Arrivals) {
        self.arrivals = arrivals;
    }

    fn spec(&self) -> Option<SpecConfig> {
        self.spec.as_ref().map(|s| s.cfg())
    }

    fn draft_info(&self) -> Option<DraftInfo> {
        self.spec.as_ref().map(|s| s.info())
    }

    fn draft_device(&self) -> &'static str {
        self.spec.as_ref().map_or("cpu", |s| s.device())
    }

    fn verify(&mut self, rows: &[VerifyRow<'_>]) -> Result<Vec<Vec<Vec<f32>>>> {
        let rows = self.verify_trees(rows, false)?;
        rows.into_iter().map(logits_only).collect()
    }

    fn verify_next(&mut self, rows: &[VerifyRow<'_>], greedy: &[bool]) -> Result<Vec<Vec<Next>>> {
        // One answer form per call, as `forward_next`: tokens only when every row is greedy.
        self.verify_trees(rows, !greedy.is_empty() && greedy.iter().all(|&g| g))
    }

    fn keep_path(&mut self, rows: &[KeepRow<'_>]) -> Result<()> {
        self.keep_paths(rows)
    }

    fn propose(&mut self, rows: &[ProposeRow<'_>]) -> Result<Vec<DraftTree>> {
        self.propose_trees(rows)
    }
}
