//! Experiment, GPU machine only (prints the speeds; asserts only correctness): which block
//! shape lets the wide FP8 GEMM (kernels/cuda/wide_fp8.cu's template, entries in
//! lab/cuda/wide_rows64.cu) beat cuBLAS on the bf16 copies at 48 and 64 token rows, on
//! Qwen3-8B's four projection shapes. Each shape (warps, 16-row fragments per warp, ring
//! stages) at the launcher's split rule for its own resident blocks; gate|up also unsplit,
//! as a SwiGLU form must run. Against cuBLAS (`ops::gemm_into`, bf16 weights: what the engine runs past
//! 32 rows) and the engine's 32-row op run twice (the reference the sums are checked
//! against). Each matrix is held in enough copies, run in turn, that no run finds it in
//! L2. `cargo run -p kernels-lab --bin wide_rows64`.

use kernels::cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use kernels::ops::{self, Fp8Matrix, WideFp8};
use kernels::{Gpu, GpuOptions, bf16, f16};
use kernels_lab::rng::Rng;
use kernels_lab::sources;
use kernels_lab::timing::{opt_in_blocks_per_sm, time_us_reps};
use kernels_lab::{no_idle, rel_err};
use std::collections::BTreeMap;

/// Bytes of weights each shape's copies add up to at least (L2 is 60 MB).
const COPY_BYTES: usize = 200 << 20;
/// Token rows of the lab's forms (8 groups of 8).
const FORM_ROWS: usize = 64;

/// One block shape: warps, 16-row fragments per warp, ring stages.
#[derive(Clone, Copy)]
struct Shape {
    warps: usize,
    rf: usize,
    stages: usize,
}

impl Shape {
    fn name(&self) -> String {
        format!("w64_w{}_r{}_s{}", self.warps, self.rf, self.stages)
    }
    fn tile_rows(&self) -> usize {
        16 * self.warps * self.rf
    }
    fn smem(&self) -> u32 {
        (self.stages * (self.tile_rows() * 128 + FORM_ROWS * 256)) as u32
    }
}

const SHAPES: [Shape; 9] = [
    Shape { warps: 4, rf: 1, stages: 4 },
    Shape { warps: 4, rf: 1, stages: 3 },
    Shape { warps: 2, rf: 2, stages: 3 },
    Shape { warps: 2, rf: 2, stages: 4 },
    Shape { warps: 4, rf: 2, stages: 2 },
    Shape { warps: 4, rf: 2, stages: 3 },
    Shape { warps: 4, rf: 2, stages: 4 },
    Shape { warps: 8, rf: 1, stages: 3 },
    Shape { warps: 8, rf: 2, stages: 3 },
];

fn main() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let st = g.stream().clone();
    let module = kernels_lab::module(&g, &opts, "wide_rows64.cu", sources::WIDE_ROWS64);
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
        let wide_codes = ops::wide_tiles(&codes, n, k);
        let w8: Vec<CudaSlice<u8>> = (0..copies).map(|_| st.clone_htod(&wide_codes).unwrap()).collect();
        let wb: Vec<bf16> = (0..n * k).map(|_| bf16::from_f32(r.unit() * 0.05)).collect();
        let w16: Vec<CudaSlice<bf16>> =
            (0..copies.div_ceil(2)).map(|_| st.clone_htod(&wb).unwrap()).collect();
        let tbs = |us: f32| (n * k) as f64 / (us as f64 * 1e-6) / 1e12;
        for m in [48usize, 64] {
            let xf: Vec<f32> = (0..m * k).map(|_| r.unit()).collect();
            let xh = st.clone_htod(&xf.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>()).unwrap();
            let xb = st.clone_htod(&xf.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>()).unwrap();
            // The reference: the engine's op on rows 0..32 and 32..m.
            let mut want = vec![0f32; m * n];
            for (lo, hi) in [(0, 32), (32, m)] {
                let x = xh.slice(lo * k..hi * k);
                let mut y = st.alloc_zeros::<f32>((hi - lo) * n).unwrap();
                let (cv, sv) = (w8[0].as_view(), s.as_view());
                let w =
                    WideFp8(Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows: 128, n, k, interleave: 0 });
                ops::wide_fp8_into(&g, &x, &w, &mut y.as_view_mut(), Default::default()).unwrap();
                want[lo * n..hi * n].copy_from_slice(&st.clone_dtoh(&y).unwrap());
            }
            let mut y = st.alloc_zeros::<f32>(m * n).unwrap();
            let us = time_us_reps(&g, 4, || {
                for c in &w16 {
                    ops::gemm_into(&g, &xb.as_view(), &c.as_view(), n, k, &mut y.as_view_mut()).unwrap();
                }
            }) / w16.len() as f32;
            println!("| {name} | {m} | cuBLAS, bf16 weights | - | - | {us:.1} | {:.2} | |", tbs(us));
            *totals.entry(format!("m={m} cuBLAS bf16")).or_default() += us * 36.0;
            for sh in SHAPES {
                let f = module.load_function(&sh.name()).unwrap();
                let threads = (32 * sh.warps) as u32;
                let per_sm = opt_in_blocks_per_sm(&f, threads, sh.smem()) as usize;
                let tiles = n / sh.tile_rows();
                let rule = no_idle(k / 128, per_sm * g.sms() / tiles);
                let mut split_counts = if name == "gate|up" { vec![1, rule] } else { vec![rule] };
                split_counts.dedup();
                for splits in split_counts {
                    let launch = |y: &mut CudaSlice<f32>, c: usize| {
                        if splits > 1 {
                            st.memset_zeros(y).unwrap();
                        }
                        let (mi, ni, ki, ri, il, si) =
                            (m as i32, n as i32, k as i32, 128i32, 0i32, splits as i32);
                        let (clear, clear_n4) = (0u64, 0i32);
                        let mut b = st.launch_builder(&f);
                        b.arg(&xh)
                            .arg(&w8[c])
                            .arg(&s)
                            .arg(y)
                            .arg(&mi)
                            .arg(&ni)
                            .arg(&ki)
                            .arg(&ri)
                            .arg(&il)
                            .arg(&si);
                        b.arg(&clear).arg(&clear_n4);
                        let cfg = LaunchConfig {
                            grid_dim: ((tiles * splits) as u32, 1, 1),
                            block_dim: (threads, 1, 1),
                            shared_mem_bytes: sh.smem(),
                        };
                        // SAFETY: x [m, k] f16, w [n, k] in the wide layout, scales [n / 128,
                        // k / 128], y [m, n] zeroed where K splits: what the kernel reads and
                        // writes; no buffer to clear (null).
                        unsafe { b.launch(cfg) }.unwrap();
                    };
                    launch(&mut y, 0);
                    let err = rel_err(&st.clone_dtoh(&y).unwrap(), &want);
                    assert!(err < 1e-4, "{name} m={m} {} splits {splits}: off by {err:e}", sh.name());
                    let us =
                        time_us_reps(&g, 4, || (0..copies).for_each(|c| launch(&mut y, c))) / copies as f32;
                    println!(
                        "| {name} | {m} | {} | {per_sm} | {splits} | {us:.1} | {:.2} | {err:.1e} |",
                        sh.name(),
                        tbs(us)
                    );
                    // gate|up: the unsplit time (as the SwiGLU form runs) in one total, the
                    // best of the two in another.
                    let key = format!("m={m} {}", sh.name());
                    if name != "gate|up" || splits == 1 {
                        *totals.entry(format!("{key} (gate|up unsplit)")).or_default() += us * 36.0;
                    }
                    if name != "gate|up" || splits == rule {
                        *totals.entry(format!("{key} (gate|up split)")).or_default() += us * 36.0;
                    }
                }
            }
        }
    }
    println!("\nAll 144 layer projections (36 layers x the four shapes), us:");
    for (what, us) in totals {
        println!("  {what}: {us:.0}");
    }
}
