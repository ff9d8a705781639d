//! The fused decode MLP (experiment, lab/cuda/mlp_fused.cu) against the two GEMMs it
//! would replace, at bf16 batch 1 in Qwen3-8B's shape (GPU machine only; prints timings,
//! asserts only that the fused kernel computes what the GEMMs do: `cargo run -p kernels-lab
//! --bin mlp_fused`).
//!
//! Why: removing down's launch, ramp, tail and PDL hand-off was the last concrete redesign
//! named for the bf16 batch-1 bar (engine/PERF-LOG.md step 57). In the engine's bench it ran
//! 0.05-0.06 ms a step behind the two GEMMs. Here each layer's MLP and the norm after it
//! run 36 times over distinct weights in one graph, as a step runs them; the fused kernel
//! also runs with its end-of-block adds as 16-byte vector reds, and with no adds at all
//! (timing only), to show what the adds cost. Before timing, the fused kernel's output is
//! checked against the GEMMs' on the same weights.

use kernels_lab::sources;
use kernels_lab::timing;

use kernels::cudarc::driver::{CudaFunction, CudaSlice, DevicePtr};
use kernels::ops::{self, WeightLayout};
use kernels::{Gpu, GpuOptions, bf16};
use kernels_lab::timing::{launch_pdl, time_us_reps};
use rayon::prelude::*;

/// A step's layers.
const LAYERS: usize = 36;
const HIDDEN: usize = 4096;
const INTER: usize = 12288;
/// TM_THREADS and TM_STAGE_BYTES (bulk_ring.cuh).
const THREADS: u32 = 288;
const STAGE_BYTES: u32 = 16 * 1040;

struct Layer {
    /// Interleaved gate|up, read as tiled by both paths.
    gate_up: CudaSlice<bf16>,
    /// down [HIDDEN, INTER] tiled, for the GEMM.
    down: CudaSlice<bf16>,
    /// The same down as `down_column_chunks`, for the fused kernel.
    chunks: CudaSlice<bf16>,
}

/// Random-ish bits (zero pages could be served by compression).
fn pattern(len: usize, salt: usize) -> Vec<bf16> {
    (0..len)
        .into_par_iter()
        .map(|i| bf16::from_f32((((i + salt) * 2_654_435_761) % 1000) as f32 * 1e-3 - 0.5))
        .collect()
}

/// down [hidden, inter] row-major -> the fused kernel's chunks: for each group c of 8
/// intermediate columns, the [hidden, 8] block Wd[:, 8c..8c + 8] row-major, chunk after
/// chunk.
fn down_column_chunks(wd: &[bf16], hidden: usize, inter: usize) -> Vec<bf16> {
    (0..wd.len())
        .into_par_iter()
        .map(|i| {
            let (c, rest) = (i / (hidden * 8), i % (hidden * 8));
            wd[(rest / 8) * inter + c * 8 + rest % 8]
        })
        .collect()
}

/// One form of the fused kernel at a ring depth: the function, opted in to its shared
/// memory, and its grid (the blocks that fit at once, at most one per gate|up tile).
struct Fused {
    f: CudaFunction,
    stages: u32,
    grid: u32,
}

impl Fused {
    fn new(g: &Gpu, opts: &GpuOptions, name: &str, src: &str, stages: u32) -> Self {
        let m = kernels_lab::module(g, opts, name, src);
        let f = m.load_function("mlp_fused_bf16").unwrap();
        let smem = stages * STAGE_BYTES;
        let per_sm = timing::opt_in_blocks_per_sm(&f, THREADS, smem);
        let grid = (per_sm * g.sms() as u32).min((2 * INTER / 16) as u32);
        Fused { f, stages, grid }
    }

    /// y += MLP(x) with layer l's weights.
    fn launch(&self, g: &Gpu, l: &Layer, x: &CudaSlice<bf16>, y: &mut CudaSlice<f32>) {
        let s = g.stream();
        let mut args = [
            x.device_ptr(s).0,
            l.gate_up.device_ptr(s).0,
            l.chunks.device_ptr(s).0,
            y.device_ptr(s).0,
            INTER as u64,
            HIDDEN as u64,
            self.stages as u64,
            1,
        ];
        launch_pdl(g, &self.f, self.grid, THREADS, self.stages * STAGE_BYTES, &mut args);
    }
}

/// The two GEMMs: act = SwiGLU(x · gate|up), o = down · act.
fn gemms(g: &Gpu, l: &Layer, x: &CudaSlice<bf16>, act: &mut CudaSlice<bf16>, o: &mut CudaSlice<f32>) {
    ops::skinny_gemm_swiglu_into(
        g,
        &x.as_view(),
        &l.gate_up.as_view(),
        WeightLayout::Tiled,
        INTER,
        HIDDEN,
        &mut act.as_view_mut(),
    )
    .unwrap();
    ops::skinny_gemm_into(
        g,
        &act.as_view(),
        &l.down.as_view(),
        WeightLayout::Tiled,
        HIDDEN,
        INTER,
        &mut o.as_view_mut(),
    )
    .unwrap();
}

fn fused_mlp_against_two_gemms() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let s = g.stream().clone();
    let d_rows = pattern(INTER * HIDDEN, 2);
    let (gu_host, d_tiled, d_chunks) = (
        pattern(2 * INTER * HIDDEN, 1),
        ops::tile_weights(&d_rows, HIDDEN, INTER),
        down_column_chunks(&d_rows, HIDDEN, INTER),
    );
    let layers: Vec<Layer> = (0..LAYERS)
        .map(|_| Layer {
            gate_up: s.clone_htod(&gu_host).unwrap(),
            down: s.clone_htod(&d_tiled).unwrap(),
            chunks: s.clone_htod(&d_chunks).unwrap(),
        })
        .collect();
    let nw: CudaSlice<f32> = s.clone_htod(&vec![1.0f32; HIDDEN]).unwrap();
    let mut h: CudaSlice<bf16> = s.clone_htod(&pattern(HIDDEN, 3)).unwrap();
    let mut resid: CudaSlice<f32> = s.alloc_zeros(HIDDEN).unwrap();
    let mut act: CudaSlice<bf16> = s.alloc_zeros(INTER).unwrap();
    let mut o: CudaSlice<f32> = s.alloc_zeros(HIDDEN).unwrap();
    let eps = 1e-6;
    let forms = [
        ("scalar red", sources::MLP_FUSED),
        ("vector red", sources::MLP_FUSED_RED_V4),
        ("no adds (timing only)", sources::MLP_FUSED_NO_RED),
    ];

    // The fused kernel adds what the GEMMs compute: the same act bits (the same tile code
    // and SwiGLU), down's sums in another order (f32 rounding).
    gemms(&g, &layers[0], &h, &mut act, &mut o);
    let want = s.clone_dtoh(&o).unwrap();
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(scale > 1.0, "the check needs outputs that are not ~0 ({scale})");
    for (name, src) in &forms[..2] {
        for stages in [6u32, 3] {
            let fused = Fused::new(&g, &opts, name, src, stages);
            let mut y: CudaSlice<f32> = s.alloc_zeros(HIDDEN).unwrap();
            fused.launch(&g, &layers[0], &h, &mut y);
            let got = s.clone_dtoh(&y).unwrap();
            let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs() / scale).fold(0f32, f32::max);
            assert!(worst < 1e-4, "{name}, {stages} stages: max |fused - GEMMs| / max |y| = {worst:e}");
            eprintln!("{name}, {stages} stages: max |fused - GEMMs| / max |y| = {worst:.2e}");
        }
    }

    let mb = ((3 * INTER * HIDDEN * 2) as f32) / 1e6;
    println!("| MLP + norm, bf16 batch 1, per layer | us | TB/s |");
    let row = |what: &str, us: f32| println!("| {what} | {us:.2} | {:.2} |", mb / us);
    let mut i = 0;
    let us = time_us_reps(&g, LAYERS, || {
        gemms(&g, &layers[i % LAYERS], &h, &mut act, &mut o);
        i += 1;
        ops::add_rmsnorm_into(
            &g,
            &mut resid.as_view_mut(),
            &o.as_view(),
            &nw.as_view(),
            eps,
            &mut h.as_view_mut(),
        )
        .unwrap();
    });
    row("gate|up + down GEMMs (tiled, the default), add_rmsnorm", us);
    for (name, src) in forms {
        for stages in [6u32, 4, 8] {
            let fused = Fused::new(&g, &opts, name, src, stages);
            let mut i = 0;
            let us = time_us_reps(&g, LAYERS, || {
                fused.launch(&g, &layers[i % LAYERS], &h, &mut resid);
                i += 1;
                ops::rmsnorm_into(&g, &mut resid.as_view_mut(), &nw.as_view(), eps, &mut h.as_view_mut())
                    .unwrap();
            });
            row(&format!("fused, {name}, {stages} stages, rmsnorm"), us);
        }
    }
}

fn main() {
    fused_mlp_against_two_gemms();
}
