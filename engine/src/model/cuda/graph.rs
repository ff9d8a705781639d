//! Decode steps as CUDA graphs, one per padded batch size of a ladder (1, 2, 4, 8, 12, 16,
//! 24, 32, 48, 64): fixed metadata, activation and logits buffers, captured at start
//! (`capture_decode_graphs`) or on first use, and replayed after. A step writes
//! its metadata into the fixed buffers, replays the graph and downloads the greedy tokens
//! (argmax runs inside the graph) or, when a row samples, the logits; with run-ahead it
//! may queue the next step first (run_ahead.rs).
//! Eager launches cost ~13.5 us each and a Qwen3-8B step has ~330 of them (engine/PERF.md):
//! the graph turns ~4.5 ms of launch overhead into ~0.2 ms. Padding rows run on a spare KV
//! page that the block manager never hands out, so they cannot disturb real sequences.

use super::meta::{HostMeta, Staging, StepMeta};
use super::step::{Scratch, forward_layers, lm_head_into};
use super::{CudaBackend, GpuKvCache, driver_err, kernel_err};
use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::model::{Next, RowHint};
use kernels::Gpu;
use kernels::cudarc::driver::{CudaEvent, CudaGraph, CudaSlice, PinnedHostSlice, sys};
use kernels::ops;

/// The captured batch sizes. A batch runs on the smallest one that holds it, so padding
/// costs at most a third of a step's rows past 8 (a pad row costs a GEMM next to nothing:
/// the weights stream once for all rows; it costs attention over one position). Larger
/// batches run eagerly.
pub const GRAPH_BATCHES: [usize; 10] = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64];
/// The largest captured batch.
pub const MAX_GRAPH_ROWS: usize = GRAPH_BATCHES[GRAPH_BATCHES.len() - 1];

/// The graph sizes batches of up to `max_batch` rows run on: the ladder up to the first
/// size that holds `max_batch` rows.
pub fn graph_sizes(max_batch: usize) -> Vec<usize> {
    let top = GRAPH_BATCHES.iter().position(|&b| b >= max_batch).unwrap_or(GRAPH_BATCHES.len() - 1);
    GRAPH_BATCHES[..=top].to_vec()
}

/// SAFETY: CUDA graph objects have no thread affinity; they only need calls on them
/// serialized (driver docs, "Graph object thread safety"). The backend owns its graphs and
/// touches them only through `&mut self`, so moving the backend to the engine thread and
/// using it there is sound.
pub(super) struct OwnedGraph(pub(super) CudaGraph);
unsafe impl Send for OwnedGraph {}

impl OwnedGraph {
    /// What `record` launches on `gpu`'s stream, captured as a graph. The capture ends
    /// whatever `record` returns, or the stream would stay unusable; its error comes first.
    pub(super) fn capture(gpu: &Gpu, record: impl FnOnce() -> Result<()>) -> Result<Self> {
        let s = gpu.stream();
        s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(driver_err("begin graph capture"))?;
        let recorded = record();
        let ended = s.end_capture(sys::CUgraphInstantiate_flags(0));
        recorded?;
        let graph = ended
            .map_err(driver_err("end graph capture"))?
            .ok_or_else(|| EngineError::Backend("graph capture recorded nothing".into()))?;
        Ok(OwnedGraph(graph))
    }
}

pub(super) struct DecodeGraph {
    pub(super) rows: usize,
    pub(super) meta: StepMeta,
    sc: Scratch,
    logits: CudaSlice<f32>,
    /// argmax of each logits row, written by the graph, and its scratch.
    pub(super) tokens: CudaSlice<u32>,
    argmax_keys: CudaSlice<u64>,
    graph: Option<OwnedGraph>,
    /// Run-ahead: page-locked metadata staging, two so that one is written while a copy
    /// out of the other may still be queued (`StepMeta::write_staged` waits for that one);
    /// the tokens' page-locked landing place, and the event after they land.
    pub(super) staging: [Staging; 2],
    pub(super) next_staging: usize,
    pub(super) tokens_host: PinnedHostSlice<u32>,
    pub(super) tokens_landed: CudaEvent,
}

/// The graph slot and padded batch size for `n` rows (1..=MAX_GRAPH_ROWS).
fn graph_slot(n: usize) -> (usize, usize) {
    let slot = GRAPH_BATCHES.iter().position(|&b| b >= n).expect("run() sends at most MAX_GRAPH_ROWS rows");
    (slot, GRAPH_BATCHES[slot])
}

impl DecodeGraph {
    /// The buffers of a graph for `b` rows, not yet captured.
    fn new(gpu: &Gpu, cfg: &ModelConfig, cache: &GpuKvCache, b: usize) -> Result<Self> {
        let s = gpu.stream();
        // Every sequence's table fits in num_pages entries, plus one for the pad page.
        let meta = StepMeta::alloc(s, b, b * cache.num_pages + 1)?;
        // SAFETY: u32 is valid for any bits; read only where a copy landed.
        let tokens_host = unsafe { s.context().alloc_pinned_with_flags::<u32>(b, 0) }
            .map_err(driver_err("alloc token landing"))?;
        let tokens_landed = gpu
            .ctx()
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(driver_err("create token event"))?;
        Ok(DecodeGraph {
            rows: b,
            staging: [meta.staging(s)?, meta.staging(s)?],
            next_staging: 0,
            tokens_host,
            tokens_landed,
            meta,
            sc: Scratch::new(gpu, cfg, b)?,
            logits: s.alloc_zeros(b * cfg.vocab_size).map_err(driver_err("alloc graph logits"))?,
            tokens: s.alloc_zeros(b).map_err(driver_err("alloc graph tokens"))?,
            argmax_keys: s
                .alloc_zeros(b * ops::ARGMAX_PARTS)
                .map_err(driver_err("alloc graph argmax keys"))?,
            graph: None,
        })
    }

    /// Record the step (layers, lm_head, argmax) over this graph's buffers as a CUDA graph.
    fn capture(
        &mut self,
        gpu: &Gpu,
        cfg: &ModelConfig,
        w: &super::weights::GpuWeights,
        cache: &mut GpuKvCache,
    ) -> Result<()> {
        let (vocab, hd) = (cfg.vocab_size, cfg.hidden_size);
        let graph = OwnedGraph::capture(gpu, || {
            // One token per sequence (run() checks): the cache before it is settled.
            forward_layers(gpu, cfg, w, cache, &mut self.sc, &self.meta, None, true)
                .and_then(|()| lm_head_into(gpu, &self.sc.h, w, (vocab, hd), &mut self.logits))
                .and_then(|()| {
                    ops::argmax_into(
                        gpu,
                        &self.logits.as_view(),
                        vocab,
                        &mut self.argmax_keys.as_view_mut(),
                        &mut self.tokens.as_view_mut(),
                    )
                    .map_err(kernel_err)
                })
        })?;
        tracing::info!(batch = self.rows, "captured decode graph");
        self.graph = Some(graph);
        Ok(())
    }

    /// Replay the captured step on its stream (`what` names the launch in an error).
    pub(super) fn replay(&self, what: &'static str) -> Result<()> {
        self.graph.as_ref().expect("captured before any replay").0.launch().map_err(driver_err(what))
    }

    /// The step's metadata into the graph's buffers: through page-locked staging when
    /// run-ahead may copy the next step's behind it (`staged`), else directly.
    fn write_meta(&mut self, gpu: &Gpu, host: &HostMeta, staged: bool) -> Result<()> {
        if !staged {
            return self.meta.write(gpu.stream(), host);
        }
        let st = &mut self.staging[self.next_staging];
        self.meta.write_staged(gpu.stream(), host, st)?;
        self.next_staging ^= 1;
        Ok(())
    }

    /// The first `n` rows' results once the step has run: their greedy tokens, or their
    /// logits.
    fn results(&self, gpu: &Gpu, n: usize, vocab: usize, greedy: bool) -> Result<Vec<Next>> {
        graph_results(gpu, (&self.tokens, &self.logits), n, vocab, greedy)
    }
}

/// The first `n` rows' results of a replayed graph from its token and logits buffers:
/// their greedy tokens, or their logits.
pub(super) fn graph_results(
    gpu: &Gpu,
    (tokens, logits): (&CudaSlice<u32>, &CudaSlice<f32>),
    n: usize,
    vocab: usize,
    greedy: bool,
) -> Result<Vec<Next>> {
    let s = gpu.stream();
    if greedy {
        let out = s.clone_dtoh(&tokens.slice(..n)).map_err(driver_err("download tokens"))?;
        gpu.sync().map_err(kernel_err)?;
        return Ok(out.into_iter().map(Next::Token).collect());
    }
    let out = s.clone_dtoh(&logits.slice(..n * vocab)).map_err(driver_err("download logits"))?;
    gpu.sync().map_err(kernel_err)?;
    Ok(out.chunks_exact(vocab).map(|r| Next::Logits(r.to_vec())).collect())
}

impl CudaBackend {
    /// Capture the graphs of every batch size up to `max_batch` rows (`graph_sizes`) now,
    /// so that no request pays a capture (tens of ms) the first time the batch reaches a
    /// new size. Each is replayed once over padding rows only, which read and write the
    /// spare page alone. Returns the sizes captured (none with graphs off).
    pub fn capture_decode_graphs(&mut self, max_batch: usize) -> Result<Vec<usize>> {
        if !self.graphs_enabled {
            return Ok(vec![]);
        }
        let sizes = graph_sizes(max_batch);
        let (pages, block) = (self.cache.num_pages, self.cache.block_size);
        let pad_rows = |b: usize| {
            let mut host = HostMeta::default();
            host.pad(b, pages, block);
            host
        };
        // Past 8 rows the GEMMs run on cuBLAS, whose first call sets itself up: let that
        // happen in an eager step, not inside a capture.
        if let Some(&big) = sizes.iter().find(|&&b| b > ops::SKINNY_MAX_ROWS) {
            let meta = StepMeta::upload(self.gpu.stream(), &pad_rows(big))?;
            let mut sc = Scratch::new(&self.gpu, &self.cfg, big)?;
            forward_layers(&self.gpu, &self.cfg, &self.w, &mut self.cache, &mut sc, &meta, None, true)?;
            self.gpu.sync().map_err(kernel_err)?;
        }
        let hint = RowHint { greedy: true, may_continue: false, only_length_ends: false };
        for &b in &sizes {
            self.decode_with_graph(pad_rows(b), hint)?;
        }
        Ok(sizes)
    }

    /// One decode step of `host.ids.len()` rows; `all.greedy`: return tokens, not logits;
    /// with run-ahead on and `all.may_continue`, queue the next step too (run_ahead.rs).
    pub(super) fn decode_with_graph(&mut self, mut host: HostMeta, all: RowHint) -> Result<Vec<Next>> {
        // Not with the step timing, which brackets each replay (and replays it again).
        let ahead_on = self.run_ahead && all.greedy && self.step_timing.is_none();
        if let Some(t) = &mut self.step_timing {
            t.call_begins();
        }
        let n = host.ids.len();
        let (slot, b) = graph_slot(n);
        if self.graphs[slot].is_none() {
            self.graphs[slot] = Some(DecodeGraph::new(&self.gpu, &self.cfg, &self.cache, b)?);
        }
        let pending = self.ahead.take();
        let CudaBackend { gpu, cfg, w, cache, graphs, step_timing, .. } = self;
        let g = graphs[slot].as_mut().expect("created above");
        host.pad(g.rows, cache.num_pages, cache.block_size);
        // The step queued ahead is this one: nothing to write or launch.
        let queued = pending.is_some_and(|p| p.is(slot, &host));
        if !queued {
            g.write_meta(gpu, &host, ahead_on)?;
        }
        let captured = g.graph.is_none();
        if captured {
            g.capture(gpu, cfg, w, cache)?;
        }
        if !queued {
            if let Some(t) = step_timing.as_mut() {
                t.replay_begins(gpu)?;
            }
            g.replay("graph launch")?;
            if let Some(t) = step_timing.as_mut() {
                t.replay_ends(gpu)?;
            }
        }
        self.ahead_hits += queued as u64;
        if ahead_on {
            return self.tokens_and_next(slot, &host, n, all.may_continue);
        }
        let (gpu, g) = (&self.gpu, self.graphs[slot].as_ref().expect("created above"));
        let out = g.results(gpu, n, self.cfg.vocab_size, all.greedy)?;
        if let Some(t) = &mut self.step_timing {
            t.call_ends(captured)?;
            if all.greedy {
                t.burst(gpu, || g.replay("graph launch"))?;
            }
        }
        Ok(out)
    }
}
