//! Does the bulk-copy skinny GEMM read faster when its weights already sit in L2? (GPU
//! machine only; prints, asserts nothing about speed: `cargo run -p kernels-lab --bin
//! l2_reuse`.)
//!
//! Why: at batch 1 HBM idles through each layer's latency-bound section (norm, rope,
//! attention, merge: ~10 us, engine/PERF-LOG.md, 2026-12-01 03:04), and o_proj's ring holds only
//! ~25 MB of its 33.5. Were o_proj's weights warmed into L2 during that section, o_proj
//! would run at L2's rate, if the bulk copies are served from L2 at all: 2026-11-30 08:56's
//! `cp.async.bulk.prefetch.L2` runs suggested they were not, but did not show it apart from
//! the prefetch's own cost. Here the same kernel runs 36 times in one graph, once over 36
//! distinct matrices (1.2 GB: every read from HBM) and once over one matrix (after the
//! first launch, what L2 kept of it), bf16, row-major and tiled (the same bytes read as
//! either layout: only the timing matters here).

use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, WeightLayout};
use kernels::{Gpu, GpuOptions, bf16};
use kernels_lab::timing::time_us_reps;

/// Launches per graph: a step's 36 layers.
const LAYERS: usize = 36;

fn bulk_gemm_reads_from_l2() {
    let g = Gpu::new(&GpuOptions::from_env().unwrap()).unwrap();
    let s = g.stream().clone();
    println!("| matrix | MB | m | layout | distinct, us (TB/s) | one matrix, us (TB/s) |");
    // o_proj; half of it; qkv (50 MB, about L2's size).
    for (name, n, k) in [("o_proj", 4096, 4096), ("half o_proj", 2048, 4096), ("qkv", 6144, 4096)] {
        // Random-ish bits: zero pages could be served by compression.
        let host: Vec<bf16> =
            (0..n * k).map(|i| bf16::from_f32(((i * 2_654_435_761) % 1000) as f32 * 1e-3 - 0.5)).collect();
        let ws: Vec<CudaSlice<bf16>> = (0..LAYERS).map(|_| s.clone_htod(&host).unwrap()).collect();
        let mb = (n * k * 2) as f32 / 1e6;
        for m in [1usize, 8] {
            let x: CudaSlice<bf16> = s.alloc_zeros(m * k).unwrap();
            let mut y: CudaSlice<f32> = s.alloc_zeros(m * n).unwrap();
            for layout in [WeightLayout::Rows, WeightLayout::Tiled] {
                let mut run = |distinct: bool| {
                    let mut i = 0;
                    time_us_reps(&g, LAYERS, || {
                        let w = &ws[if distinct { i % LAYERS } else { 0 }];
                        i += 1;
                        ops::skinny_gemm_into(
                            &g,
                            &x.as_view(),
                            &w.as_view(),
                            layout,
                            n,
                            k,
                            &mut y.as_view_mut(),
                        )
                        .unwrap();
                    })
                };
                let (cold, warm) = (run(true), run(false));
                // MB per us is TB/s.
                let tb = |us: f32| mb / us;
                println!(
                    "| {name} | {mb:.1} | {m} | {layout:?} | {cold:.2} ({:.2}) | {warm:.2} ({:.2}) |",
                    tb(cold),
                    tb(warm)
                );
            }
        }
    }
}

fn main() {
    bulk_gemm_reads_from_l2();
}
