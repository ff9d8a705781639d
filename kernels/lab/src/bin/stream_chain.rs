//! Experiment, GPU machine only (prints, asserts only correctness): the 144 linears of a
//! Qwen3-8B decode step (36 distinct layers: qkv, o, gate|up, down) as a chain of launches
//! (the ops, persistent, captured in a graph as the engine does) against ONE persistent
//! kernel whose producer warps stream weights across GEMM boundaries while the multiplying
//! warps meet at a grid barrier between GEMMs (lab/cuda/stream_chain.cu). If the second is
//! much faster, the launch boundaries (drain, ramp, hand-off) are where the linears lose
//! bandwidth, and a persistent decode step is the way to the speed bars.
//! `cargo run -p kernels-lab --bin stream_chain`.
//!
//! Answer (H200, 2026-11-30 08:56, engine/PERF-LOG.md step 21): no. The launches stream the layer
//! linears at 4.07 TB/s (bf16, batch 1: 3412 us) and 3.36 (FP8: 2065 us); the one kernel
//! reached at best 3.90 and 3.10 (3548 / 2241 us, 6-stage rings, rotated tiles). The chain
//! of launches already hides its boundaries; a persistent step must win elsewhere (the
//! attention and norms between the GEMMs).

use kernels_lab::timing;

use kernels::cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};
use kernels::cudarc::nvrtc::Ptx;
use kernels::ops;
use kernels::{Gpu, GpuOptions, bf16};
use kernels_lab::sources;
use kernels_lab::timing::time_us_reps;

const HIDDEN: usize = 4096;
const INTER: usize = 12288;
const QKV: usize = 6144;
const LAYERS: usize = 36;
const THREADS: u32 = 9 * 32;
const STAGE_BYTES: u32 = 16 * (1024 + 16);

/// (rotate, backoff ns) of the chain kernel's tile order and barrier spin.
const HOWS: [(i32, i32); 3] = [(0, 0), (1, 0), (0, 100)];

/// The (N, K) of one layer's linears, in step order.
const SHAPES: [(usize, usize); 4] = [(QKV, HIDDEN), (HIDDEN, HIDDEN), (2 * INTER, HIDDEN), (HIDDEN, INTER)];

enum W {
    Bf16(CudaSlice<bf16>),
    Fp8(CudaSlice<u8>, CudaSlice<f32>),
}

impl W {
    fn new(g: &Gpu, n: usize, k: usize, fp8: bool, fill: Option<u64>) -> Self {
        let s = g.stream();
        let mut r = fill.unwrap_or(0);
        let mut next = move || {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((r >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        if fp8 {
            let sc = n.div_ceil(128) * k.div_ceil(128);
            match fill {
                None => W::Fp8(s.alloc_zeros(n * k).unwrap(), s.alloc_zeros(sc).unwrap()),
                Some(_) => {
                    // Codes 0x00-0x77 and 0x80-0xf7: finite e4m3 values, no NaN.
                    let codes: Vec<u8> = (0..n * k)
                        .map(|_| {
                            let v = ((next() + 0.5) * 240.0) as u8 % 240;
                            if v < 120 { v } else { v - 120 + 0x80 }
                        })
                        .collect();
                    let scales: Vec<f32> = (0..sc).map(|_| (next() + 0.6) / 64.0).collect();
                    W::Fp8(s.clone_htod(&codes).unwrap(), s.clone_htod(&scales).unwrap())
                }
            }
        } else {
            match fill {
                None => W::Bf16(s.alloc_zeros(n * k).unwrap()),
                Some(_) => {
                    let v: Vec<bf16> = (0..n * k).map(|_| bf16::from_f32(next())).collect();
                    W::Bf16(s.clone_htod(&v).unwrap())
                }
            }
        }
    }

    /// y = x w^T through the ops (the engine's path).
    fn run(&self, g: &Gpu, x: &CudaSlice<bf16>, m: usize, n: usize, k: usize, y: &mut CudaSlice<f32>) {
        let xv = x.slice(..m * k);
        let mut yv = y.slice_mut(..m * n);
        match self {
            W::Bf16(w) => ops::skinny_gemm_into(g, &xv, &w.as_view(), ops::WeightLayout::Rows, n, k, &mut yv),
            W::Fp8(c, s) => {
                let (cv, sv) = (c.as_view(), s.as_view());
                let m8 = ops::Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows: 128, n, k, interleave: 0 };
                ops::skinny_gemm_fp8_into(g, &xv, &m8, &mut yv)
            }
        }
        .unwrap()
    }

    /// The chain kernel's descriptor (ChainGemm, 6 u64).
    fn desc(&self, g: &Gpu, x: &CudaSlice<bf16>, y: &CudaSlice<f32>, n: usize, k: usize) -> [u64; 6] {
        let s = g.stream();
        let (w, sc) = match self {
            W::Bf16(w) => (w.device_ptr(s).0, 0),
            W::Fp8(c, sc) => (c.device_ptr(s).0, sc.device_ptr(s).0),
        };
        let (xp, yp) = (x.device_ptr(s).0, y.device_ptr(s).0);
        [w, sc, xp, yp, n as u64 | (k as u64) << 32, 128]
    }
}

struct Chain {
    func: CudaFunction,
    grid: u32,
    smem: u32,
}

impl Chain {
    fn new(g: &Gpu, cubin: &[u8], fp8: bool, stages: u32) -> Self {
        let module = g.ctx().load_module(Ptx::from_binary(cubin.to_vec())).unwrap();
        let name = if fp8 { "stream_chain_fp8" } else { "stream_chain_bf16" };
        let func = module.load_function(name).unwrap();
        let smem = stages * STAGE_BYTES;
        let per_sm = timing::opt_in_blocks_per_sm(&func, THREADS, smem);
        Chain { func, grid: per_sm * g.sms() as u32, smem }
    }

    fn launch(
        &self,
        g: &Gpu,
        descs: &CudaSlice<u64>,
        m: usize,
        bar: &mut CudaSlice<u32>,
        stages: u32,
        (rotate, backoff): (i32, i32),
    ) {
        let s = g.stream();
        s.memset_zeros(bar).unwrap();
        let n = (descs.len() / 6) as i32;
        let (mi, st) = (m as i32, stages as i32);
        let mut b = s.launch_builder(&self.func);
        b.arg(descs).arg(&n).arg(&mi).arg(bar).arg(&st).arg(&rotate).arg(&backoff);
        let cfg = LaunchConfig {
            grid_dim: (self.grid, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: self.smem,
        };
        // SAFETY: the descriptors point at live buffers of the sizes they name; the grid is
        // at most the resident blocks, so the grid barrier cannot wait on an unplaced block.
        unsafe { b.launch(cfg) }.unwrap();
    }
}

/// The chain kernel computes what the ops compute, bit for bit (same tiles, same order
/// within a tile), over three GEMMs of random weights, each block looping over tiles.
fn check_bits(g: &Gpu, cubin: &[u8], fp8: bool, stages: u32) {
    let chain = Chain::new(g, cubin, fp8, stages);
    let s = g.stream();
    let shapes = [(QKV, HIDDEN), (2 * INTER, HIDDEN), (HIDDEN, INTER)];
    let ws: Vec<W> =
        shapes.iter().enumerate().map(|(i, &(n, k))| W::new(g, n, k, fp8, Some(i as u64 + 1))).collect();
    for m in [1usize, 5, 8] {
        let xs: Vec<bf16> =
            (0..m * INTER).map(|i| bf16::from_f32(((i * 7919) % 1000) as f32 / 1000.0 - 0.5)).collect();
        let x = s.clone_htod(&xs).unwrap();
        let mut want: Vec<CudaSlice<f32>> =
            shapes.iter().map(|&(n, _)| s.alloc_zeros(m * n).unwrap()).collect();
        let mut got: Vec<CudaSlice<f32>> =
            shapes.iter().map(|&(n, _)| s.alloc_zeros(m * n).unwrap()).collect();
        let mut descs = vec![];
        for (i, &(n, k)) in shapes.iter().enumerate() {
            ws[i].run(g, &x, m, n, k, &mut want[i]);
            descs.extend(ws[i].desc(g, &x, &got[i], n, k));
        }
        let d = s.clone_htod(&descs).unwrap();
        let mut bar = s.alloc_zeros::<u32>(1).unwrap();
        for how in HOWS {
            for y in got.iter_mut() {
                s.memset_zeros(y).unwrap();
            }
            chain.launch(g, &d, m, &mut bar, stages, how);
            for i in 0..shapes.len() {
                let (a, b) = (s.clone_dtoh(&want[i]).unwrap(), s.clone_dtoh(&got[i]).unwrap());
                assert!(a.iter().any(|v| *v != 0.0), "gemm {i}: all zeros");
                assert_eq!(a, b, "fp8 {fp8} stages {stages} m {m} gemm {i} {how:?}: chain != ops");
            }
        }
    }
}

fn linears_as_launches_against_one_streaming_kernel() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let s = g.stream();
    let cubin = kernels_lab::cubin(&g, &opts, "stream_chain.cu", sources::STREAM_CHAIN);
    let bytes_per_step = |fp8: bool| {
        let e: usize = SHAPES.iter().map(|(n, k)| n * k).sum::<usize>() * LAYERS;
        if fp8 { e } else { 2 * e }
    };
    println!("| weights | m | path | us | TB/s |");
    for fp8 in [false, true] {
        for stages in [2u32, 3, 4, 6] {
            check_bits(&g, &cubin, fp8, stages);
        }
        let layers: Vec<Vec<W>> =
            (0..LAYERS).map(|_| SHAPES.iter().map(|&(n, k)| W::new(&g, n, k, fp8, None)).collect()).collect();
        let x = s.alloc_zeros::<bf16>(8 * INTER).unwrap();
        let mut y = s.alloc_zeros::<f32>(8 * 2 * INTER).unwrap();
        let tb = |us: f32| bytes_per_step(fp8) as f64 / (us as f64 * 1e-6) / 1e12;
        let tag = if fp8 { "fp8" } else { "bf16" };
        for m in [1usize, 8] {
            let us = time_us_reps(&g, 1, || {
                for l in &layers {
                    for (w, &(n, k)) in l.iter().zip(&SHAPES) {
                        w.run(&g, &x, m, n, k, &mut y);
                    }
                }
            });
            println!("| {tag} | {m} | 144 launches (ops, defaults) | {us:.0} | {:.2} |", tb(us));
            let mut descs = vec![];
            for l in &layers {
                for (w, &(n, k)) in l.iter().zip(&SHAPES) {
                    descs.extend(w.desc(&g, &x, &y, n, k));
                }
            }
            let d = s.clone_htod(&descs).unwrap();
            let mut bar = s.alloc_zeros::<u32>(1).unwrap();
            for stages in [2u32, 3, 4, 6] {
                let chain = Chain::new(&g, &cubin, fp8, stages);
                for how in HOWS {
                    let us = time_us_reps(&g, 1, || chain.launch(&g, &d, m, &mut bar, stages, how));
                    println!(
                        "| {tag} | {m} | one streaming kernel, {stages} stages, {} blocks, (rotate, backoff ns) {how:?} | {us:.0} | {:.2} |",
                        chain.grid,
                        tb(us)
                    );
                }
            }
        }
    }
}

fn main() {
    linears_as_launches_against_one_streaming_kernel();
}
