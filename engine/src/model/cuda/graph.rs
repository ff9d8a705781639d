//! Decode steps as CUDA graphs, one per padded batch size (1, 2, 4, 8): fixed metadata,
//! activation and logits buffers, captured on first use and replayed after. A step writes
//! its metadata into the fixed buffers, replays the graph and downloads the greedy tokens
//! (argmax runs inside the graph) or, when a row samples, the logits.
//! Eager launches cost ~13.5 us each and a Qwen3-8B step has ~330 of them (GPU.md): the
//! graph turns ~4.5 ms of launch overhead into ~0.2 ms. Padding rows run on a spare KV page
//! that the block manager never hands out, so they cannot disturb real sequences.

use super::meta::{HostMeta, StepMeta};
use super::step::{Scratch, forward_layers, linear};
use super::{CudaBackend, driver_err, kernel_err};
use crate::error::{EngineError, Result};
use crate::model::Next;
use kernels::cudarc::driver::{CudaGraph, CudaSlice, sys};
use kernels::ops;

pub(super) const GRAPH_BATCHES: [usize; 4] = [1, 2, 4, 8];

/// SAFETY: CUDA graph objects have no thread affinity; they only need calls on them
/// serialized (driver docs, "Graph object thread safety"). The backend owns its graphs and
/// touches them only through `&mut self`, so moving the backend to the engine thread and
/// using it there is sound.
struct OwnedGraph(CudaGraph);
unsafe impl Send for OwnedGraph {}

pub(super) struct DecodeGraph {
    rows: usize,
    meta: StepMeta,
    sc: Scratch,
    logits: CudaSlice<f32>,
    /// argmax of each logits row, written by the graph, and its scratch.
    tokens: CudaSlice<u32>,
    argmax_keys: CudaSlice<u64>,
    graph: Option<OwnedGraph>,
}

impl CudaBackend {
    /// One decode step of `host.ids.len()` rows; `all_greedy`: return tokens, not logits.
    pub(super) fn decode_with_graph(
        &mut self,
        mut host: HostMeta,
        all_greedy: bool,
    ) -> Result<Vec<Next>> {
        if let Some(t) = &mut self.step_timing {
            t.call_begins();
        }
        let n = host.ids.len();
        let b = GRAPH_BATCHES
            .iter()
            .copied()
            .find(|&b| b >= n)
            .expect("n <= 8");
        let slot = GRAPH_BATCHES.iter().position(|&x| x == b).expect("listed");
        let s = self.gpu.stream().clone();
        let (vocab, hd) = (self.cfg.vocab_size, self.cfg.hidden_size);
        if self.graphs[slot].is_none() {
            // Every sequence's table fits in num_pages entries, plus one for the pad page.
            let cap = b * self.cache.num_pages + 1;
            self.graphs[slot] = Some(DecodeGraph {
                rows: b,
                meta: StepMeta::alloc(&s, b, cap)?,
                sc: Scratch::new(&self.gpu, &self.cfg, b)?,
                logits: s
                    .alloc_zeros(b * vocab)
                    .map_err(driver_err("alloc graph logits"))?,
                tokens: s.alloc_zeros(b).map_err(driver_err("alloc graph tokens"))?,
                argmax_keys: s
                    .alloc_zeros(b * ops::ARGMAX_PARTS)
                    .map_err(driver_err("alloc graph argmax keys"))?,
                graph: None,
            });
        }
        let CudaBackend {
            gpu,
            cfg,
            w,
            cache,
            graphs,
            step_timing,
            ..
        } = self;
        let g = graphs[slot].as_mut().expect("created above");
        host.pad(g.rows, cache.num_pages, cache.block_size);
        g.meta.write(&s, &host)?;
        let captured = g.graph.is_none();
        if captured {
            s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .map_err(driver_err("begin graph capture"))?;
            // One token per sequence (run() checks): the cache before it is settled.
            let recorded = forward_layers(gpu, cfg, w, cache, &mut g.sc, &g.meta, None, true)
                .and_then(|()| linear(gpu, &g.sc.h, w.lm_head(), vocab, hd, &mut g.logits))
                .and_then(|()| {
                    ops::argmax_into(
                        gpu,
                        &g.logits.as_view(),
                        vocab,
                        &mut g.argmax_keys.as_view_mut(),
                        &mut g.tokens.as_view_mut(),
                    )
                    .map_err(kernel_err)
                });
            // End the capture whatever happened, or the stream stays unusable.
            let ended = s.end_capture(sys::CUgraphInstantiate_flags(0));
            recorded?;
            let graph = ended
                .map_err(driver_err("end graph capture"))?
                .ok_or_else(|| EngineError::Backend("graph capture recorded nothing".into()))?;
            tracing::info!(batch = b, "captured decode graph");
            g.graph = Some(OwnedGraph(graph));
        }
        if let Some(t) = step_timing {
            t.replay_begins(gpu)?;
        }
        g.graph
            .as_ref()
            .expect("captured")
            .0
            .launch()
            .map_err(driver_err("graph launch"))?;
        if let Some(t) = step_timing {
            t.replay_ends(gpu)?;
        }
        if all_greedy {
            let out = s
                .clone_dtoh(&g.tokens.slice(..n))
                .map_err(driver_err("download tokens"))?;
            gpu.sync().map_err(kernel_err)?;
            if let Some(t) = step_timing {
                t.call_ends(captured)?;
                let graph = &g.graph.as_ref().expect("captured").0;
                t.burst(gpu, || graph.launch().map_err(driver_err("graph launch")))?;
            }
            return Ok(out.into_iter().map(Next::Token).collect());
        }
        let out = s
            .clone_dtoh(&g.logits.slice(..n * vocab))
            .map_err(driver_err("download logits"))?;
        gpu.sync().map_err(kernel_err)?;
        if let Some(t) = step_timing {
            t.call_ends(captured)?;
        }
        Ok(out
            .chunks_exact(vocab)
            .map(|r| Next::Logits(r.to_vec()))
            .collect())
    }
}
