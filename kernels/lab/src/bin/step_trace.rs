//! The block timeline of a whole decode step (GPU machine only; prints, and asserts only
//! that the timeline is whole): `cargo run -p kernels-lab --bin step_trace`.
//!
//! The step of step_chain, compiled with the block timeline (kernels/src/trace.rs):
//! every block records when it starts and when its wait on the previous kernel returns.
//! A launch's first wait return is when the kernel before it finished, so the gap from
//! one launch's to the next one's is that launch's share of the step's critical path:
//! from the moment it could proceed to the moment it was done. Per kernel of a layer
//! (mean over layers 2-35): that share, and when its blocks were placed against the moment
//! it could proceed (positive: some blocks were not even resident then).
//! `LATLAB_CHAIN_WEIGHTS` and `LATLAB_CHAIN_BATCHES` pick the cases (kernels_lab::step::cases);
//! `LATLAB_TRACE_SLOWEST` the kernels whose slowest blocks it lists.

use kernels::cudarc::driver::CudaSlice;
use kernels::trace::{EventKind, LaunchTimes, TraceEvent, launches};
use kernels::{Gpu, GpuOptions, bf16};
use kernels_lab::step::*;
use kernels_lab::timing::{capture, time_us_reps};

/// Room for one step's block records: ~330 launches, up to ~500 blocks each.
const BLOCKS: usize = 1 << 18;

/// One step as a graph: warmed up three times, then replayed once with the trace cleared.
fn traced_step(g: &Gpu, f: impl FnMut()) -> (Vec<TraceEvent>, Vec<LaunchTimes>) {
    let graph = capture(g, 1, f);
    let s = g.stream();
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    g.trace().unwrap().clear(s).unwrap();
    graph.launch().unwrap();
    g.sync().unwrap();
    let (events, lost) = g.trace().unwrap().events(s).unwrap();
    assert_eq!(lost, 0, "the trace buffer overflowed");
    let l = launches(&events);
    (events, l)
}

/// The slowest blocks of launch `i` (by their last event), with their events after the
/// launch's release: which blocks hold the critical path, and on which SMs.
fn slowest_blocks(events: &[TraceEvent], timeline: &[LaunchTimes], i: usize, n: usize) {
    let l = &timeline[i];
    let (from, to) = (l.first_start, timeline[i + 1].first_wait.unwrap());
    let release = l.first_wait.unwrap() as i64;
    let mut blocks: std::collections::BTreeMap<u32, (u32, Vec<(EventKind, u64)>)> = Default::default();
    for e in events {
        if e.grid == l.grid && e.warps == l.warps && e.t_ns >= from && e.t_ns <= to {
            let b = blocks.entry(e.block).or_insert((e.sm, vec![]));
            b.1.push((e.kind, e.t_ns));
        }
    }
    let mut v: Vec<_> = blocks.into_iter().collect();
    v.sort_by_key(|(_, (_, ev))| std::cmp::Reverse(ev.iter().map(|e| e.1).max()));
    for (block, (sm, ev)) in v.iter().take(n) {
        let list: Vec<String> =
            ev.iter().map(|(k, t)| format!("{k:?} {:+.2}", (*t as i64 - release) as f64 / 1e3)).collect();
        println!("  block {block} (SM {sm}): {}", list.join(", "));
    }
}

/// The kernels of one layer, in step order (kernels_lab::step::step): the merge kernel runs
/// where the split attention does not merge in clusters; `twice`: the attention runs
/// again (`Omit::attention_twice`).
fn layer_kernels(merge: bool, twice: bool) -> Vec<&'static str> {
    let mut k = vec!["input norm", "qkv", "qk-norm/rope/kv", "attention"];
    if merge {
        k.push("attention merge");
    }
    if twice {
        k.push("attention, again");
        if merge {
            k.push("attention merge, again");
        }
    }
    k.extend(["o_proj", "post norm", "gate|up+swiglu", "down"]);
    k
}

fn decode_step_block_timeline() {
    let env = GpuOptions::from_env().unwrap();
    let us = |ns: f64| ns / 1e3;
    // LATLAB_TRACE_ATTENTION_TWICE=1: the attention twice per layer (instruction caches).
    let twice = std::env::var("LATLAB_TRACE_ATTENTION_TWICE").as_deref() == Ok("1");
    // Its kernel list (one layer's, in step order) is the skinny path's: 1-8 rows.
    let (weights, batches) = cases(kernels::ops::SKINNY_MAX_ROWS);
    for fp8 in weights {
        let base = env.clone();
        let plain = Gpu::new(&base).unwrap();
        let traced = Gpu::new(&GpuOptions { trace_events: BLOCKS, ..base.clone() }).unwrap();
        for &m in &batches {
            let mut times = vec![];
            let mut timeline = vec![];
            let mut events = vec![];
            for g in [&plain, &traced] {
                let head: CudaSlice<bf16> = g.stream().alloc_zeros(VOCAB * HIDDEN).unwrap();
                let mut layers = Layer::all_zeros(g, fp8, m);
                let meta = Meta::new(g, m);
                let mut b = Buffers::new(g, m);
                let omit = Omit { attention_twice: twice, ..Omit::default() };
                let mut run = || step(g, m, &mut layers, &head, &meta, &mut b, omit);
                times.push(time_us_reps(g, 1, &mut run));
                if g.trace().is_some() {
                    (events, timeline) = traced_step(g, run);
                }
            }
            let w = if fp8 { "fp8" } else { "bf16" };
            println!(
                "\n### {w}, batch {m}: step {:.0} us untraced, {:.0} traced; {} launches",
                times[0],
                times[1],
                timeline.len()
            );
            // The embedding, LAYERS layers, then the final norm, lm_head and argmax.
            let per = (timeline.len() - 1 - 4) / LAYERS;
            // 9 kernels a layer with the merge kernel (11 with the attention twice), 8
            // with clusters (9).
            let merge = per == if twice { 11 } else { 9 };
            let names = layer_kernels(merge, twice);
            assert_eq!(names.len(), per, "{} launches", timeline.len());
            assert_eq!(1 + LAYERS * per + 4, timeline.len());
            // Times as ns after the step's first block start: %globaltimer counts from the
            // epoch, and an f64 of that keeps only 256 ns steps.
            let t0 = timeline[0].first_start;
            let at = |t: u64| (t as i64 - t0 as i64) as f64;
            let rel = |i: usize| at(timeline[i].first_wait.expect("every launch waits"));
            println!(
                "| kernel | grid x warps | critical share, us (mean / min / max) | first block placed, us | last block placed, us | waits spread, us | marks, us after release (block mean / last block) |"
            );
            println!("|---|---|---|---|---|---|---|");
            let mut total = 0.0;
            for (j, name) in names.iter().enumerate() {
                let (mut sum, mut lo, mut hi) = (0.0, f64::MAX, 0f64);
                let (mut first, mut last, mut spread) = (0.0, 0.0, 0.0);
                let mut marks = [0.0f64; 6];
                let mut means = [0.0f64; 6];
                let mut marked = [true; 6];
                let layers = 2..LAYERS;
                for li in layers.clone() {
                    let i = 1 + li * per + j;
                    let l = &timeline[i];
                    let share = rel(i + 1) - rel(i);
                    sum += share;
                    lo = lo.min(share);
                    hi = hi.max(share);
                    first += at(l.first_start) - rel(i);
                    last += at(l.last_start) - rel(i);
                    spread += (l.last_wait.unwrap() - l.first_wait.unwrap()) as f64;
                    for (k, m) in l.last_mark.iter().enumerate() {
                        match (m, l.mean_mark(k as u8 + 2)) {
                            (Some(t), Some(mean)) => {
                                marks[k] += at(*t) - rel(i);
                                means[k] += at(l.first_start) + mean - rel(i);
                            }
                            _ => marked[k] = false,
                        }
                    }
                }
                let n = layers.len() as f64;
                total += sum / n;
                // Points the kernel marks itself (TRACE_MARK) after its release: the
                // blocks' mean, then the last block's.
                let mark_list: Vec<String> = (0..6)
                    .filter(|&k| marked[k])
                    .map(|k| {
                        let (mean, last) = (us(means[k] / n), us(marks[k] / n));
                        format!("mark {} {mean:+.2}/{last:+.2}", k + 2)
                    })
                    .collect();
                let l = &timeline[1 + 2 * per + j];
                println!(
                    "| {name} | {} x {} | {:.2} / {:.2} / {:.2} | {:.2} | {:.2} | {:.2} | {} |",
                    l.grid,
                    l.warps,
                    us(sum / n),
                    us(lo),
                    us(hi),
                    us(first / n),
                    us(last / n),
                    us(spread / n),
                    mark_list.join(", ")
                );
            }
            // LATLAB_TRACE_SLOWEST: the layer kernels whose slowest blocks to list
            // (comma-separated names of the table, default `attention`).
            let slowest = std::env::var("LATLAB_TRACE_SLOWEST").unwrap_or("attention".into());
            for want in slowest.split(',') {
                let Some(j) = names.iter().position(|n| *n == want.trim()) else {
                    panic!("LATLAB_TRACE_SLOWEST: {want:?} is not one of {names:?}");
                };
                println!("slowest {want} blocks of layer 17 (us after the launch's release):");
                slowest_blocks(&events, &timeline, 1 + 17 * per + j, 6);
            }
            println!(
                "per layer {:.2} us, x {LAYERS} = {:.0} us; first wait to last wait of the step: {:.0} us",
                us(total),
                us(total) * LAYERS as f64,
                us(rel(timeline.len() - 1) - rel(0))
            );
        }
    }
}

fn main() {
    decode_step_block_timeline();
}
