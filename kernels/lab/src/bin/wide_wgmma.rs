//! Experiment, GPU machine only (prints the speeds; asserts only correctness): does the wide
//! FP8 GEMM on the warpgroup MMA (lab/cuda/wide_wgmma.cu) beat the production mma.sync forms
//! at 16, 32 and 64 token rows once a warpgroup keeps two stages of MMAs in flight
//! (engine/PERF-LOG.md step 79 measured the one-stage form slower)? On Qwen3-8B's four
//! projection shapes: the production op (`ops::wide_fp8_into` with its own split rule; the
//! reference the sums are checked against) and each lab entry at the launcher's split rule
//! for its own resident blocks. Neither is timed with y's zeroing (the engine's chained
//! GEMMs clear it for each other). Each matrix is held in enough copies, run in turn, that
//! no run finds it in L2. `cargo run -p kernels-lab --bin wide_wgmma`.

use kernels::cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use kernels::ops::{self, Fp8Matrix, WideFp8, WideZeros};
use kernels::{Gpu, GpuOptions, f16};
use kernels_lab::rng::Rng;
use kernels_lab::sources;
use kernels_lab::timing::{opt_in_blocks_per_sm, time_us_reps};
use kernels_lab::{no_idle, rel_err};
use std::collections::BTreeMap;

/// Bytes of weights each shape's copies add up to at least (L2 is 60 MB).
const COPY_BYTES: usize = 200 << 20;
/// Rows of a tile of the layout (a warpgroup's MMA rows) and k of a stage.
const TILE: usize = 64;
const STAGE_K: usize = 128;

/// One lab entry: the token rows it stages, its warpgroups, ring stages and stages of MMAs
/// in flight (2: the scales folded into the A fragments, so its error is its own).
struct Entry {
    name: &'static str,
    rows: usize,
    warpgroups: usize,
    stages: usize,
    pipe: usize,
}

impl Entry {
    fn block_rows(&self) -> usize {
        TILE * self.warpgroups
    }
    fn threads(&self) -> u32 {
        128 * self.warpgroups as u32
    }
    fn smem(&self) -> u32 {
        (self.stages * (self.block_rows() * 128 + self.rows * 256)) as u32
    }
}

const ENTRIES: [Entry; 7] = [
    Entry { name: "wg_m16_w1_s4_p1", rows: 16, warpgroups: 1, stages: 4, pipe: 1 },
    Entry { name: "wg_m16_w1_s4_p2", rows: 16, warpgroups: 1, stages: 4, pipe: 2 },
    Entry { name: "wg_m32_w1_s4_p1", rows: 32, warpgroups: 1, stages: 4, pipe: 1 },
    Entry { name: "wg_m32_w1_s4_p2", rows: 32, warpgroups: 1, stages: 4, pipe: 2 },
    Entry { name: "wg_m64_w2_s6_p1", rows: 64, warpgroups: 2, stages: 6, pipe: 1 },
    Entry { name: "wg_m64_w2_s6_p2", rows: 64, warpgroups: 2, stages: 6, pipe: 2 },
    Entry { name: "wg_m64_w1_s4_p2", rows: 64, warpgroups: 1, stages: 4, pipe: 2 },
];

/// FP8 codes [n, k] row-major -> 8b64780's wide layout: the production one (`ops::wide_tiles`:
/// 64-row tiles, 128-k stages, each stage's rows one run, 16-byte units swizzled by row % 8)
/// with a row's 128 codes of a stage in the MMAs' order (`mma_order`).
fn mma_tiles(codes: &[u8], n: usize, k: usize) -> Vec<u8> {
    let mut out = vec![0u8; n * k];
    for (dst, src) in out.chunks_mut(TILE * k).zip(codes.chunks(TILE * k)) {
        for s in 0..k / STAGE_K {
            for r in 0..TILE {
                let run = &mut dst[(s * TILE + r) * STAGE_K..][..STAGE_K];
                for c in 0..STAGE_K {
                    let p = mma_order(c);
                    run[((p / 16) ^ (r % 8)) * 16 + p % 16] = src[r * k + s * STAGE_K + c];
                }
            }
        }
    }
    out
}

/// Where k `c` of a stage goes in a row's run: MMA s takes k 16s..16s + 15, of which thread
/// t of a quad holds 2t, 2t + 1 and 2t + 8, 2t + 9; thread t's 32 codes are bytes 32t.., MMA
/// s's four at 4s..4s + 3 of them.
fn mma_order(c: usize) -> usize {
    let (s, hi, t, pair) = (c / 16, c / 8 % 2, c % 8 / 2, c % 2);
    32 * t + 4 * s + 2 * hi + pair
}

fn main() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let st = g.stream().clone();
    let module = kernels_lab::module(&g, &opts, "wide_wgmma.cu", sources::WIDE_WGMMA);
    let mut r = Rng(17);
    let dims = [
        ("qkv", 6144usize, 4096usize),
        ("o_proj", 4096, 4096),
        ("gate|up", 24576, 4096),
        ("down", 4096, 12288),
    ];
    let mut totals = BTreeMap::<String, f32>::new();
    println!("| shape | m | kernel | per SM | splits | us | TB/s (FP8 bytes) | err |");
    for (name, n, k) in dims {
        let copies = COPY_BYTES.div_ceil(n * k).max(2);
        let codes: Vec<u8> = (0..n * k).map(|_| r.code()).collect();
        let scales: Vec<f32> = (0..n / 128 * (k / 128)).map(|_| r.scale()).collect();
        let s = st.clone_htod(&scales).unwrap();
        let (prod_codes, lab_codes) = (ops::wide_tiles(&codes, n, k), mma_tiles(&codes, n, k));
        let prod: Vec<CudaSlice<u8>> = (0..copies).map(|_| st.clone_htod(&prod_codes).unwrap()).collect();
        let lab: Vec<CudaSlice<u8>> = (0..copies).map(|_| st.clone_htod(&lab_codes).unwrap()).collect();
        let tbs = |us: f32| (n * k) as f64 / (us as f64 * 1e-6) / 1e12;
        for m in [16usize, 32, 64] {
            let xh: Vec<f16> = (0..m * k).map(|_| f16::from_f32(r.unit())).collect();
            let x = st.clone_htod(&xh).unwrap();
            let sv = s.as_view();
            let op = |c: usize, y: &mut CudaSlice<f32>, zeros: WideZeros<'_, '_>| {
                let cv = prod[c].as_view();
                let w =
                    WideFp8(Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows: 128, n, k, interleave: 0 });
                ops::wide_fp8_into(&g, &x.as_view(), &w, &mut y.as_view_mut(), zeros).unwrap();
            };
            let mut y = st.alloc_zeros::<f32>(m * n).unwrap();
            op(0, &mut y, WideZeros::default());
            let want = st.clone_dtoh(&y).unwrap();
            let zeroed = || WideZeros { y_zeroed: true, clear: None };
            let us =
                time_us_reps(&g, 4, || (0..copies).for_each(|c| op(c, &mut y, zeroed()))) / copies as f32;
            println!("| {name} | {m} | production (mma.sync) | - | - | {us:.1} | {:.2} | |", tbs(us));
            *totals.entry(format!("m={m} production")).or_default() += us * 36.0;
            for e in ENTRIES.iter().filter(|e| e.rows == m) {
                let f = module.load_function(e.name).unwrap();
                let per_sm = opt_in_blocks_per_sm(&f, e.threads(), e.smem()) as usize;
                let tiles = n / e.block_rows();
                let splits = no_idle(k / STAGE_K, per_sm * g.sms() / tiles);
                let launch = |y: &mut CudaSlice<f32>, c: usize| {
                    let (mi, ni, ki, ri, il, si) =
                        (m as i32, n as i32, k as i32, 128i32, 0i32, splits as i32);
                    let mut b = st.launch_builder(&f);
                    b.arg(&x)
                        .arg(&lab[c])
                        .arg(&s)
                        .arg(y)
                        .arg(&mi)
                        .arg(&ni)
                        .arg(&ki)
                        .arg(&ri)
                        .arg(&il)
                        .arg(&si);
                    let cfg = LaunchConfig {
                        grid_dim: ((tiles * splits) as u32, 1, 1),
                        block_dim: (e.threads(), 1, 1),
                        shared_mem_bytes: e.smem(),
                    };
                    // SAFETY: x [m, k] f16, w [n, k] in the lab's layout, scales [n / 128,
                    // k / 128], y [m, n] (zeroed before the checked run, where K splits):
                    // what the kernel reads and writes.
                    unsafe { b.launch(cfg) }.unwrap();
                };
                st.memset_zeros(&mut y).unwrap();
                launch(&mut y, 0);
                let err = rel_err(&st.clone_dtoh(&y).unwrap(), &want);
                // The folded scales round each weight to f16: ~1e-3 of the largest sum.
                let tol = if e.pipe == 2 { 1e-2 } else { 1e-4 };
                assert!(err < tol, "{name} m={m} {} splits {splits}: off by {err:e}", e.name);
                let us = time_us_reps(&g, 4, || (0..copies).for_each(|c| launch(&mut y, c))) / copies as f32;
                println!(
                    "| {name} | {m} | {} | {per_sm} | {splits} | {us:.1} | {:.2} | {err:.1e} |",
                    e.name,
                    tbs(us)
                );
                *totals.entry(format!("m={m} {}", e.name)).or_default() += us * 36.0;
            }
        }
    }
    println!("\nAll 144 layer projections (36 layers x the four shapes), us:");
    for (what, us) in totals {
        println!("  {what}: {us:.0}");
    }
}
