//! Verify steps as CUDA graphs, as decode steps are (graph.rs): one per padded count of
//! trees (the decode ladder's sizes) and nodes per tree, captured the first time a verify
//! of that shape runs and replayed after. A verify of 16 Qwen3-8B nodes launches ~450
//! kernels; eagerly they and the per-call buffers cost about 2 ms of a ~6 ms verify (H200,
//! engine/PERF-LOG.md). Padding trees are one node each on the spare KV page.

use super::graph::{GRAPH_BATCHES, OwnedGraph, graph_results};
use super::meta::{HostMeta, StepMeta};
use super::spec_timing::Part;
use super::step::{Scratch, forward_layers, lm_head_into};
use super::{CudaBackend, driver_err, kernel_err};
use crate::error::Result;
use crate::model::Next;
use kernels::cudarc::driver::CudaSlice;
use kernels::ops;

pub(super) struct VerifyGraph {
    /// Padded trees and nodes per tree this graph runs.
    shape: (usize, usize),
    meta: StepMeta,
    logits: CudaSlice<f32>,
    tokens: CudaSlice<u32>,
    /// The activations and the argmax's scratch: only the graph touches them, and they
    /// must live as long as it does.
    _held: (Scratch, CudaSlice<u64>),
    graph: OwnedGraph,
}

/// The padded tree count of a verify of `trees` trees, if a graph takes it.
pub(super) fn padded_trees(trees: usize) -> Option<usize> {
    GRAPH_BATCHES.iter().copied().find(|&b| b >= trees)
}

impl CudaBackend {
    /// A verify of `host` (every tree `nodes` nodes, `trees` of them) on its graph, capturing
    /// the graph first if this shape has none; the real nodes' tokens or logits.
    pub(super) fn verify_with_graph(
        &mut self,
        mut host: HostMeta,
        (trees, nodes): (usize, usize),
        greedy: bool,
        began: std::time::Instant,
    ) -> Result<Vec<Next>> {
        let padded = padded_trees(trees).expect("the caller checked the tree count");
        let n = host.ids.len();
        let (pages, bs) = (self.cache.num_pages, self.cache.block_size);
        host.pad_tree(padded * nodes, pages, bs);
        let slot = match self.verify_graphs.iter().position(|g| g.shape == (padded, nodes)) {
            Some(i) => i,
            None => {
                let g = self.capture_verify(&host, (padded, nodes))?;
                self.verify_graphs.push(g);
                self.verify_graphs.len() - 1
            }
        };
        let (gpu, vocab) = (&self.gpu, self.cfg.vocab_size);
        let g = &mut self.verify_graphs[slot];
        let mut timing = self.spec.as_mut().and_then(|s| s.timing.as_mut());
        let mut part = timing.as_mut().map(|t| t.begin_at(gpu, Part::Verify, began)).transpose()?;
        g.meta.write(gpu.stream(), &host)?;
        g.graph.0.launch().map_err(driver_err("verify graph launch"))?;
        if let (Some(t), Some(b)) = (timing.as_mut(), part.as_mut()) {
            t.queued(gpu, b)?;
        }
        let out = graph_results(gpu, (&g.tokens, &g.logits), n, vocab, greedy)?;
        if let (Some(t), Some(b)) = (timing, part) {
            t.end(gpu, b)?;
            t.settle(gpu)?;
        }
        Ok(out)
    }

    /// Records a verify of `shape` over fresh fixed buffers (`host` only sizes the tables).
    fn capture_verify(&mut self, host: &HostMeta, shape: (usize, usize)) -> Result<VerifyGraph> {
        let (gpu, cfg) = (&self.gpu, &self.cfg);
        let (rows, vocab, hd) = (host.ids.len(), cfg.vocab_size, cfg.hidden_size);
        let s = gpu.stream();
        // Every tree's table fits in num_pages entries, plus one for the pad page.
        let mut meta = StepMeta::alloc_tree(s, rows, shape.0 * self.cache.num_pages + 1)?;
        meta.write(s, host)?;
        let a = driver_err("alloc verify graph buffers");
        let mut sc = Scratch::for_tree(gpu, cfg, rows)?;
        let mut logits = s.alloc_zeros::<f32>(rows * vocab).map_err(&a)?;
        let mut tokens = s.alloc_zeros::<u32>(rows).map_err(&a)?;
        let mut keys = s.alloc_zeros::<u64>(rows * ops::ARGMAX_PARTS).map_err(&a)?;
        let w = &self.w;
        let cache = &mut self.cache;
        // No dequant buffer: the caller takes graphs only where the GEMMs need none.
        let graph = OwnedGraph::capture(gpu, || {
            forward_layers(gpu, cfg, w, cache, &mut sc, &meta, None, false)
                .and_then(|()| lm_head_into(gpu, &sc.h, w, (vocab, hd), &mut logits))
                .and_then(|()| {
                    let (lv, mut kv, mut tv) = (logits.as_view(), keys.as_view_mut(), tokens.as_view_mut());
                    ops::argmax_into(gpu, &lv, vocab, &mut kv, &mut tv).map_err(kernel_err)
                })
        })?;
        tracing::info!(trees = shape.0, nodes = shape.1, "captured verify graph");
        Ok(VerifyGraph { shape, meta, logits, tokens, _held: (sc, keys), graph })
    }
}
