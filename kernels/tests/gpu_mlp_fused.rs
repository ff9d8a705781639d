//! The fused decode MLP (mlp_fused.cu) against the two GEMMs it replaces, at bf16 batch 1
//! in Qwen3-8B's shape (GPU machine only; prints, asserts nothing about speed: `cargo test
//! -p kernels --test gpu_mlp_fused -- --ignored --nocapture`).
//!
//! Why: the engine's bench put the fused MLP 0.05-0.06 ms a step behind the two GEMMs
//! (engine/PERF.md step 57), where the design predicted it ahead. Here each layer's MLP and
//! the norm after it run 36 times over distinct weights in one graph, as a step runs them,
//! and the fused kernel also runs with its end-of-block adds as 16-byte vector reds, and
//! with no adds at all (timing only), to show what the adds cost. The weights' bits are
//! the same pattern in every layout (only the timing matters here).

mod experiment_src;
mod timing_common;

use kernels::cudarc::driver::sys::CUfunction_attribute;
use kernels::cudarc::driver::{CudaFunction, CudaSlice, DevicePtr};
use kernels::ops::{self, MlpFusedWeights, WeightLayout};
use kernels::{Gpu, GpuOptions, bf16};
use timing_common::{launch_pdl, time_us_reps};

/// A step's layers.
const LAYERS: usize = 36;
const HIDDEN: usize = 4096;
const INTER: usize = 12288;
/// TM_THREADS and TM_STAGE_BYTES (bulk_ring.cuh).
const THREADS: u32 = 288;
const STAGE_BYTES: u32 = 16 * 1040;

struct Layer {
    gate_up: CudaSlice<bf16>,
    down: CudaSlice<bf16>,
    chunks: CudaSlice<bf16>,
}

/// Random-ish bits (zero pages could be served by compression).
fn pattern(len: usize, salt: usize) -> Vec<bf16> {
    (0..len)
        .map(|i| bf16::from_f32((((i + salt) * 2_654_435_761) % 1000) as f32 * 1e-3 - 0.5))
        .collect()
}

/// A variant's kernel from its experiment source, opted in to `stages` ring stages; and the
/// blocks of it that fit the GPU at once.
fn variant(g: &Gpu, opts: &GpuOptions, name: &str, src: &str, stages: u32) -> (CudaFunction, u32) {
    let m = experiment_src::module(g, opts, name, src);
    let f = m.load_function("mlp_fused_bf16").unwrap();
    let smem = stages * STAGE_BYTES;
    f.set_attribute(
        CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        smem as i32,
    )
    .unwrap();
    let per_sm = f
        .occupancy_max_active_blocks_per_multiprocessor(THREADS, smem as usize, None)
        .unwrap();
    assert!(per_sm > 0, "{name}: no block fits");
    (f, per_sm * g.sms() as u32)
}

#[test]
#[ignore = "gpu"]
fn fused_mlp_against_two_gemms() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let s = g.stream().clone();
    let (gu_host, d_host) = (pattern(2 * INTER * HIDDEN, 1), pattern(INTER * HIDDEN, 2));
    let layers: Vec<Layer> = (0..LAYERS)
        .map(|_| Layer {
            gate_up: s.clone_htod(&gu_host).unwrap(),
            down: s.clone_htod(&d_host).unwrap(),
            chunks: s.clone_htod(&d_host).unwrap(),
        })
        .collect();
    let nw: CudaSlice<f32> = s.clone_htod(&vec![1.0f32; HIDDEN]).unwrap();
    let mut h: CudaSlice<bf16> = s.clone_htod(&pattern(HIDDEN, 3)).unwrap();
    let mut resid: CudaSlice<f32> = s.alloc_zeros(HIDDEN).unwrap();
    let mut act: CudaSlice<bf16> = s.alloc_zeros(INTER).unwrap();
    let mut o: CudaSlice<f32> = s.alloc_zeros(HIDDEN).unwrap();
    let eps = 1e-6;
    let mb = ((3 * INTER * HIDDEN * 2) as f32) / 1e6;
    println!("| MLP + norm, bf16 batch 1, per layer | us | TB/s |");
    let row = |what: &str, us: f32| println!("| {what} | {us:.2} | {:.2} |", mb / us);

    let mut i = 0;
    let us = time_us_reps(&g, LAYERS, || {
        let l = &layers[i % LAYERS];
        i += 1;
        ops::skinny_gemm_swiglu_into(
            &g,
            &h.as_view(),
            &l.gate_up.as_view(),
            WeightLayout::Tiled,
            INTER,
            HIDDEN,
            &mut act.as_view_mut(),
        )
        .unwrap();
        ops::skinny_gemm_into(
            &g,
            &act.as_view(),
            &l.down.as_view(),
            WeightLayout::Tiled,
            HIDDEN,
            INTER,
            &mut o.as_view_mut(),
        )
        .unwrap();
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

    for stages in [6u32, 4, 8] {
        let mut i = 0;
        let us = time_us_reps(&g, LAYERS, || {
            let l = &layers[i % LAYERS];
            i += 1;
            let (guv, cv) = (l.gate_up.as_view(), l.chunks.as_view());
            let w = MlpFusedWeights {
                gate_up: &guv,
                layout: WeightLayout::Tiled,
                down_chunks: &cv,
                inter: INTER,
                hidden: HIDDEN,
            };
            ops::mlp_fused_bf16_into(&g, &h.as_view(), &w, stages, &mut resid.as_view_mut())
                .unwrap();
            ops::rmsnorm_into(
                &g,
                &mut resid.as_view_mut(),
                &nw.as_view(),
                eps,
                &mut h.as_view_mut(),
            )
            .unwrap();
        });
        row(&format!("fused, scalar red, {stages} stages, rmsnorm"), us);
    }

    for (name, src) in [
        ("vector red", experiment_src::MLP_FUSED_RED_V4),
        ("no adds (timing only)", experiment_src::MLP_FUSED_NO_RED),
    ] {
        for stages in [6u32, 8] {
            let (f, blocks) = variant(&g, &opts, name, src, stages);
            let mut i = 0;
            let us = time_us_reps(&g, LAYERS, || {
                let l = &layers[i % LAYERS];
                i += 1;
                let mut args = [
                    h.device_ptr(&s).0,
                    l.gate_up.device_ptr(&s).0,
                    l.chunks.device_ptr(&s).0,
                    resid.device_ptr(&s).0,
                    INTER as u64,
                    HIDDEN as u64,
                    stages as u64,
                    1,
                ];
                let grid = blocks.min((2 * INTER / 16) as u32);
                launch_pdl(&g, &f, grid, THREADS, stages * STAGE_BYTES, &mut args);
                ops::rmsnorm_into(
                    &g,
                    &mut resid.as_view_mut(),
                    &nw.as_view(),
                    eps,
                    &mut h.as_view_mut(),
                )
                .unwrap();
            });
            row(&format!("fused, {name}, {stages} stages, rmsnorm"), us);
        }
    }
}
