//! Decode steps as CUDA graphs, one per padded batch size (1, 2, 4, 8): fixed metadata,
//! activation and logits buffers, captured on first use and replayed after. A step writes
//! its metadata into the fixed buffers, replays the graph and downloads the greedy tokens
//! (argmax runs inside the graph) or, when a row samples, the logits.
//! Eager launches cost ~13.5 us each and a Qwen3-8B step has ~330 of them (GPU.md): the
//! graph turns ~4.5 ms of launch overhead into ~0.2 ms. Padding rows run on a spare KV page
//! that the block manager never hands out, so they cannot disturb real sequences.

use super::meta::{HostMeta, Staging, StepMeta};
use super::step::{Scratch, forward_layers, lm_head_into};
use super::{CudaBackend, RunAhead, driver_err, kernel_err};
use crate::error::{EngineError, Result};
use crate::model::{Next, RowHint};
use kernels::cudarc::driver::{CudaEvent, CudaGraph, CudaSlice, PinnedHostSlice, sys};
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
    /// Run-ahead: page-locked metadata staging, two so that one is written while a copy
    /// out of the other may still be queued (`StepMeta::write_staged` waits for that one);
    /// the tokens' page-locked landing place, and the event after they land.
    staging: [Staging; 2],
    next_staging: usize,
    tokens_host: PinnedHostSlice<u32>,
    tokens_landed: CudaEvent,
}

/// Run-ahead (`LATLAB_RUN_AHEAD`, run_ahead.rs): a greedy decode step whose rows may all
/// continue (`RowHint`, `RunAhead::queues`) queues the step after it, as the engine will
/// ask for it, before it waits for its own tokens: its metadata with the positions one
/// further on, the ids copied on the GPU from this step's argmax, and the graph again. The
/// host's work between steps (the token's trip, the engine loop, the next metadata) then
/// overlaps the GPU's step instead of leaving the GPU idle: 30-45 us per step at batch 1
/// (LATLAB_STEP_TIMING, H200, session 13), of which 10-20 came back (session 14). When the
/// engine's next call is that step, it is already queued; when it is not (a row stopped on
/// its token, a new request, a row sampled), the queued step still runs first and its work
/// is lost: it wrote each row's K/V at the next position, in the row's own pages, which a
/// real step rewrites or, once a page is freed, its next owner writes before it reads
/// (attention reads only positions below a row's context). `RunAhead::Late` queues the
/// metadata and ids the same way but launches the graph only after this step's tokens have
/// landed, and only while no request is on its way in (`Arrivals`), so that a new request's
/// prefill does not wait behind a step started early.
pub(super) struct Ahead {
    /// The graph slot it was queued on.
    slot: usize,
    /// Its metadata, ids filled with the tokens it was queued after.
    meta: HostMeta,
}

impl DecodeGraph {
    /// Replay the captured step on its stream (`what` names the launch in an error).
    fn replay(&self, what: &'static str) -> Result<()> {
        self.graph
            .as_ref()
            .expect("captured before any replay")
            .0
            .launch()
            .map_err(driver_err(what))
    }
}

impl CudaBackend {
    /// One decode step of `host.ids.len()` rows; `all.greedy`: return tokens, not logits;
    /// with run-ahead on and `all.may_continue`, queue the next step first (`Ahead`).
    pub(super) fn decode_with_graph(
        &mut self,
        mut host: HostMeta,
        all: RowHint,
    ) -> Result<Vec<Next>> {
        let all_greedy = all.greedy;
        // Not with the step timing, which brackets each replay (and replays it again).
        let ahead_on = self.run_ahead != RunAhead::Off && all_greedy && self.step_timing.is_none();
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
            let meta = StepMeta::alloc(&s, b, cap)?;
            // SAFETY: u32 is valid for any bits; read only where a copy landed.
            let tokens_host = unsafe { s.context().alloc_pinned_with_flags::<u32>(b, 0) }
                .map_err(driver_err("alloc token landing"))?;
            self.graphs[slot] = Some(DecodeGraph {
                rows: b,
                staging: [meta.staging(&s)?, meta.staging(&s)?],
                next_staging: 0,
                tokens_host,
                tokens_landed: self
                    .gpu
                    .ctx()
                    .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                    .map_err(driver_err("create token event"))?,
                meta,
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
        let pending = self.ahead.take();
        let CudaBackend {
            gpu,
            cfg,
            w,
            cache,
            graphs,
            step_timing,
            ahead,
            ahead_hits,
            run_ahead,
            arrivals,
            ..
        } = self;
        let g = graphs[slot].as_mut().expect("created above");
        host.pad(g.rows, cache.num_pages, cache.block_size);
        // The step queued ahead is this one: nothing to launch.
        let queued = pending.is_some_and(|p| p.slot == slot && p.meta == host);
        *ahead_hits += queued as u64;
        if !queued {
            if ahead_on {
                g.meta
                    .write_staged(&s, &host, &mut g.staging[g.next_staging])?;
                g.next_staging ^= 1;
            } else {
                g.meta.write(&s, &host)?;
            }
        }
        let captured = g.graph.is_none();
        if captured {
            s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .map_err(driver_err("begin graph capture"))?;
            // One token per sequence (run() checks): the cache before it is settled.
            let recorded = forward_layers(gpu, cfg, w, cache, &mut g.sc, &g.meta, None, true)
                .and_then(|()| lm_head_into(gpu, &g.sc.h, w, (vocab, hd), &mut g.logits))
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
        if !queued {
            if let Some(t) = step_timing {
                t.replay_begins(gpu)?;
            }
            g.replay("graph launch")?;
            if let Some(t) = step_timing {
                t.replay_ends(gpu)?;
            }
        }
        if ahead_on {
            // This step's tokens, then (maybe) the next step's metadata and ids, and its
            // launch (`late`: after the wait for the tokens, and only with no request on its
            // way in, so that a new prefill never queues behind it).
            s.memcpy_dtoh(&g.tokens.slice(..n), &mut g.tokens_host)
                .map_err(driver_err("download tokens"))?;
            g.tokens_landed
                .record(&s)
                .map_err(driver_err("record token event"))?;
            let late = run_ahead.launches_after_tokens();
            let mut prepared = None;
            if all.may_continue
                && let Some(next) = host.advanced(n, cache.block_size)
            {
                // Harmless if no launch follows (`late`): the next call writes its own
                // metadata, and these copies run after this step has read its own.
                g.meta
                    .write_staged(&s, &next, &mut g.staging[g.next_staging])?;
                g.next_staging ^= 1;
                s.memcpy_dtod(&g.tokens.slice(..n), &mut g.meta.ids_mut().slice_mut(..n))
                    .map_err(driver_err("feed tokens ahead"))?;
                prepared = Some(next);
            }
            if !late && let Some(next) = prepared.take() {
                g.replay("graph launch ahead")?;
                *ahead = Some(Ahead { slot, meta: next });
            }
            g.tokens_landed
                .synchronize()
                .map_err(driver_err("wait for tokens"))?;
            if let Some(next) = prepared
                && !arrivals.pending()
            {
                g.replay("graph launch after the tokens")?;
                *ahead = Some(Ahead { slot, meta: next });
            }
            let out = g
                .tokens_host
                .as_slice()
                .map_err(driver_err("read tokens"))?[..n]
                .to_vec();
            if let Some(a) = ahead {
                a.meta.ids[..n].copy_from_slice(&out);
            }
            return Ok(out.into_iter().map(Next::Token).collect());
        }
        if all_greedy {
            let out = s
                .clone_dtoh(&g.tokens.slice(..n))
                .map_err(driver_err("download tokens"))?;
            gpu.sync().map_err(kernel_err)?;
            if let Some(t) = step_timing {
                t.call_ends(captured)?;
                t.burst(gpu, || g.replay("graph launch"))?;
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
