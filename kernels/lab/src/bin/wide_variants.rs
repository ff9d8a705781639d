//! Experiment, GPU machine only (prints the speeds; asserts only correctness): which of the
//! wide FP8 GEMM's shape choices holds it at 2.2-3.2 TB/s on Qwen3-8B's projections at 16
//! and 32 token rows. Its main loop (lab/cuda/wide_variants.cu) at weight rows per block 64
//! or 128, ring depths 4-8, and three ways of reading the weights (production row-major
//! cp.async; tiled so a stage is one contiguous run, by cp.async; tiled by one bulk copy),
//! each at the launcher's split rule for its own resident blocks (gate|up unsplit, as its
//! SwiGLU form must be), beside the engine's op (`ops::wide_fp8_into`, its memset
//! included; since step 74 the 64-row bulk form) and the step-73 production form (128 rows,
//! row-major) with no memset in front (timing only: the sums are wrong without it). Each matrix is held in enough copies that no run finds it in L2.
//! `cargo run -p kernels-lab --bin wide_variants`.

use kernels::cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use kernels::ops::{self, Fp8Matrix, WideFp8, WideZeros};
use kernels::{Gpu, GpuOptions, f16};
use kernels_lab::rng::Rng;
use kernels_lab::sources;
use kernels_lab::timing::{opt_in_blocks_per_sm, time_us_reps};
use kernels_lab::{no_idle, rel_err};
use std::collections::BTreeMap;

/// Bytes of weights each shape's copies add up to at least (L2 is 60 MB).
const COPY_BYTES: usize = 200 << 20;

/// One variant: token-row groups of 8, warps (16 weight rows each), ring stages, read mode.
#[derive(Clone, Copy)]
struct Variant {
    mt: usize,
    warps: usize,
    stages: usize,
    mode: usize,
}

impl Variant {
    fn name(&self) -> String {
        format!("wv_m{}_w{}_s{}_{}", self.mt, self.warps, self.stages, self.mode)
    }
    fn tile_rows(&self) -> usize {
        16 * self.warps
    }
    fn smem(&self) -> u32 {
        (self.stages * (self.tile_rows() * 128 + self.mt * 8 * 256)) as u32
    }
}

const VARIANTS: [Variant; 18] = [
    Variant { mt: 2, warps: 8, stages: 4, mode: 0 },
    Variant { mt: 2, warps: 8, stages: 4, mode: 1 },
    Variant { mt: 2, warps: 8, stages: 4, mode: 2 },
    Variant { mt: 2, warps: 8, stages: 8, mode: 2 },
    Variant { mt: 2, warps: 4, stages: 4, mode: 0 },
    Variant { mt: 2, warps: 4, stages: 4, mode: 2 },
    Variant { mt: 2, warps: 4, stages: 6, mode: 2 },
    Variant { mt: 4, warps: 8, stages: 4, mode: 0 },
    Variant { mt: 4, warps: 8, stages: 4, mode: 1 },
    Variant { mt: 4, warps: 8, stages: 4, mode: 2 },
    Variant { mt: 4, warps: 4, stages: 4, mode: 2 },
    Variant { mt: 4, warps: 4, stages: 6, mode: 2 },
    Variant { mt: 2, warps: 2, stages: 4, mode: 2 },
    Variant { mt: 2, warps: 2, stages: 8, mode: 2 },
    Variant { mt: 2, warps: 4, stages: 3, mode: 2 },
    Variant { mt: 2, warps: 4, stages: 5, mode: 2 },
    Variant { mt: 4, warps: 2, stages: 4, mode: 2 },
    Variant { mt: 4, warps: 4, stages: 3, mode: 2 },
];

/// Codes [n, k] in the variants' tiled layout for `rows`-row tiles: stage s of tile T at
/// (T * k / 128 + s) * rows * 128, row r's unit p holding its unit p ^ (r & 7).
fn tiled(codes: &[u8], n: usize, k: usize, rows: usize) -> Vec<u8> {
    let mut out = vec![0u8; n * k];
    let nch = k / 128;
    for t in 0..n / rows {
        for s in 0..nch {
            let base = (t * nch + s) * rows * 128;
            for r in 0..rows {
                for p in 0..8 {
                    let u = p ^ (r & 7);
                    let src = (t * rows + r) * k + s * 128 + u * 16;
                    let dst = base + r * 128 + p * 16;
                    out[dst..dst + 16].copy_from_slice(&codes[src..src + 16]);
                }
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn launch(
    g: &Gpu,
    f: &CudaFunction,
    v: &Variant,
    x: &CudaSlice<f16>,
    w: &CudaSlice<u8>,
    s: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    (m, n, k): (usize, usize, usize),
    splits: usize,
    zero: bool,
) {
    if splits > 1 && zero {
        g.stream().memset_zeros(y).unwrap();
    }
    let (mi, ni, ki, ri, il, si) = (m as i32, n as i32, k as i32, 128i32, 0i32, splits as i32);
    let mut b = g.stream().launch_builder(f);
    b.arg(x).arg(w).arg(s).arg(y).arg(&mi).arg(&ni).arg(&ki).arg(&ri).arg(&il).arg(&si);
    let cfg = LaunchConfig {
        grid_dim: ((n / v.tile_rows() * splits) as u32, 1, 1),
        block_dim: ((32 * v.warps) as u32, 1, 1),
        shared_mem_bytes: v.smem(),
    };
    // SAFETY: x [m, k] f16, w [n, k] codes in the variant's layout, scales [n / 128, k /
    // 128], y [m, n]: what the kernel reads and writes.
    unsafe { b.launch(cfg) }.unwrap();
}

fn main() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let st = g.stream().clone();
    let module = kernels_lab::module(&g, &opts, "wide_variants.cu", sources::WIDE_VARIANTS);
    let mut r = Rng(11);
    let shapes = [
        ("qkv", 6144usize, 4096usize),
        ("o_proj", 4096, 4096),
        ("gate|up", 24576, 4096),
        ("down", 4096, 12288),
    ];
    let mut totals = BTreeMap::<String, f32>::new();
    println!("| shape | m | kernel | per SM | splits | us | TB/s | err |");
    for (name, n, k) in shapes {
        let copies = COPY_BYTES.div_ceil(n * k).max(2);
        let codes: Vec<u8> = (0..n * k).map(|_| r.code()).collect();
        let scales: Vec<f32> = (0..n / 128 * (k / 128)).map(|_| r.scale()).collect();
        let s = st.clone_htod(&scales).unwrap();
        let rows_major: Vec<CudaSlice<u8>> = (0..copies).map(|_| st.clone_htod(&codes).unwrap()).collect();
        let mut tiles = BTreeMap::<usize, Vec<CudaSlice<u8>>>::new();
        for rows in [32usize, 64, 128] {
            let t = tiled(&codes, n, k, rows);
            tiles.insert(rows, (0..copies).map(|_| st.clone_htod(&t).unwrap()).collect());
        }
        let split_ok = name != "gate|up";
        for m in [16usize, 32] {
            let xf: Vec<f32> = (0..m * k).map(|_| r.unit()).collect();
            let xh = st.clone_htod(&xf.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>()).unwrap();
            let mut y = st.alloc_zeros::<f32>(m * n).unwrap();
            let sv = s.as_view();
            let op = |y: &mut CudaSlice<f32>, c: usize| {
                let wv = tiles[&ops::WIDE_TILE_ROWS][c].as_view();
                let m8 =
                    WideFp8(Fp8Matrix { codes: &wv, scale_inv: &sv, scale_rows: 128, n, k, interleave: 0 });
                ops::wide_fp8_into(&g, &xh.as_view(), &m8, &mut y.as_view_mut(), Default::default()).unwrap();
            };
            op(&mut y, 0);
            let want = st.clone_dtoh(&y).unwrap();
            let us = time_us_reps(&g, 4, || (0..copies).for_each(|c| op(&mut y, c))) / copies as f32;
            let tbs = |us: f32| (n * k) as f64 / (us as f64 * 1e-6) / 1e12;
            println!("| {name} | {m} | engine wide_fp8 op | - | rule | {us:.1} | {:.2} | |", tbs(us));
            *totals.entry(format!("m={m} engine op")).or_default() += us * 36.0;
            for v in VARIANTS.iter().filter(|v| v.mt * 8 == m) {
                let f = module.load_function(&v.name()).unwrap();
                let per_sm = opt_in_blocks_per_sm(&f, (32 * v.warps) as u32, v.smem()) as usize;
                let ntiles = n / v.tile_rows();
                let splits = if split_ok { no_idle(k / 128, per_sm * g.sms() / ntiles) } else { 1 };
                let w = if v.mode == 0 { &rows_major } else { &tiles[&v.tile_rows()] };
                launch(&g, &f, v, &xh, &w[0], &s, &mut y, (m, n, k), splits, true);
                let err = rel_err(&st.clone_dtoh(&y).unwrap(), &want);
                assert!(err < 1e-4, "{name} m={m} {}: off by {err:e}", v.name());
                for zero in [true, false] {
                    // Unsplit (gate|up) it is the same launch: timed again so the totals add all four.
                    if !zero && (v.mode != 0 || v.warps != 8) {
                        continue;
                    }
                    let us = time_us_reps(&g, 4, || {
                        (0..copies)
                            .for_each(|c| launch(&g, &f, v, &xh, &w[c], &s, &mut y, (m, n, k), splits, zero))
                    }) / copies as f32;
                    let what = if zero {
                        v.name()
                    } else {
                        format!("{} without its memset (timing only)", v.name())
                    };
                    println!(
                        "| {name} | {m} | {what} | {per_sm} | {splits} | {us:.1} | {:.2} | {err:.1e} |",
                        tbs(us)
                    );
                    *totals.entry(format!("m={m} {what}")).or_default() += us * 36.0;
                }
            }
        }
    }
    println!("\nAll 144 layer projections (36 layers x the four shapes, gate|up unsplit), us:");
    for (what, us) in totals {
        println!("  {what}: {us:.0}");
    }
    println!("\nThe 144 projections as a step chains them (the engine's ops, one graph, PDL), us:");
    for m in [16usize, 32] {
        let (chained, memsets) = chain_us(&g, &mut r, m);
        println!(
            "  m={m}: {chained:.0} chained (each split y cleared by the GEMM before); {memsets:.0} with a memset before each split GEMM"
        );
    }
}

/// Layers held for the chain: cycled over 36, 1.5 GB of codes, so no GEMM finds its
/// weights in L2.
const CHAIN_LAYERS: usize = 8;

/// One layer's four FP8 projections in the wide layout (gate|up read as interleaved, as the
/// step's SwiGLU form needs; random codes time the same in any order) and their scales.
struct ChainLayer {
    w: [(CudaSlice<u8>, CudaSlice<f32>); 4],
}

/// Qwen3-8B's 36 layers of qkv, o_proj, gate|up with SwiGLU and down at `m` rows through
/// the engine's ops in one captured graph, as half_x.rs calls them: f16 x for qkv, gate|up
/// and down, bf16 x (the attention's output) for o_proj; each split GEMM's y cleared by the
/// wide GEMM before it (`WideZeros`), and again with a memset in front of each split GEMM
/// instead (the engine before step 74). Asserts that the last down's sums match a
/// standalone op's. Returns both times in us per chain.
fn chain_us(g: &Gpu, r: &mut Rng, m: usize) -> (f32, f32) {
    let st = g.stream();
    let (hd, qkv_n, inter) = (4096usize, 6144usize, 12288usize);
    let shapes = [(qkv_n, hd), (hd, hd), (2 * inter, hd), (hd, inter)];
    let layers: Vec<ChainLayer> = (0..CHAIN_LAYERS)
        .map(|_| ChainLayer {
            w: shapes.map(|(n, k)| {
                let codes: Vec<u8> = (0..n * k).map(|_| r.code()).collect();
                let scales: Vec<f32> = (0..n / 128 * (k / 128)).map(|_| r.scale()).collect();
                (st.clone_htod(&ops::wide_tiles(&codes, n, k)).unwrap(), st.clone_htod(&scales).unwrap())
            }),
        })
        .collect();
    let xf = |len: usize, r: &mut Rng| (0..len).map(|_| r.unit()).collect::<Vec<f32>>();
    let h16 = st.clone_htod(&xf(m * hd, r).iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>()).unwrap();
    let act16 =
        st.clone_htod(&xf(m * inter, r).iter().map(|&v| f16::from_f32(v * 0.1)).collect::<Vec<_>>()).unwrap();
    let attn = st
        .clone_htod(&xf(m * hd, r).iter().map(|&v| kernels::bf16::from_f32(v)).collect::<Vec<_>>())
        .unwrap();
    let mut act_out = st.alloc_zeros::<f16>(m * inter).unwrap();
    let mut qkv = st.alloc_zeros::<f32>(m * qkv_n).unwrap();
    let mut o = st.alloc_zeros::<f32>(m * hd).unwrap();
    // down reads `act16` (fixed), not the SwiGLU's output, so every down's sums are known.
    let mut chain = |chained: bool| {
        for li in 0..36 {
            let l = &layers[li % CHAIN_LAYERS];
            let m8 = |i: usize, il: usize| (l.w[i].0.as_view(), l.w[i].1.as_view(), shapes[i], il);
            {
                let ((c, s, (n, k), il), mut clear) = (m8(0, 0), o.as_view_mut());
                let w =
                    WideFp8(Fp8Matrix { codes: &c, scale_inv: &s, scale_rows: 128, n, k, interleave: il });
                let z = WideZeros { y_zeroed: chained && li > 0, clear: chained.then_some(&mut clear) };
                ops::wide_fp8_into(g, &h16.as_view(), &w, &mut qkv.as_view_mut(), z).unwrap();
            }
            {
                let (c, s, (n, k), il) = m8(1, 0);
                let w =
                    WideFp8(Fp8Matrix { codes: &c, scale_inv: &s, scale_rows: 128, n, k, interleave: il });
                let z = WideZeros { y_zeroed: chained, clear: None };
                ops::wide_fp8_into(g, &attn.as_view(), &w, &mut o.as_view_mut(), z).unwrap();
            }
            {
                let ((c, s, (n, k), il), mut clear) = (m8(2, inter), o.as_view_mut());
                let w =
                    WideFp8(Fp8Matrix { codes: &c, scale_inv: &s, scale_rows: 128, n, k, interleave: il });
                let clear = chained.then_some(&mut clear);
                ops::wide_fp8_swiglu_into(g, &h16.as_view(), &w, &mut act_out.as_view_mut(), clear).unwrap();
            }
            {
                let ((c, s, (n, k), il), mut clear) = (m8(3, 0), qkv.as_view_mut());
                let w =
                    WideFp8(Fp8Matrix { codes: &c, scale_inv: &s, scale_rows: 128, n, k, interleave: il });
                let z = WideZeros { y_zeroed: chained, clear: chained.then_some(&mut clear) };
                ops::wide_fp8_into(g, &act16.as_view(), &w, &mut o.as_view_mut(), z).unwrap();
            }
        }
    };
    let chained = time_us_reps(g, 2, || chain(true));
    let memsets = time_us_reps(g, 2, || chain(false));
    // The last chain the stream ran, eagerly and chained, leaves the last down's sums in o.
    chain(true);
    let got = st.clone_dtoh(&o).unwrap();
    let last = &layers[35 % CHAIN_LAYERS];
    let (c, s) = (last.w[3].0.as_view(), last.w[3].1.as_view());
    let w = WideFp8(Fp8Matrix { codes: &c, scale_inv: &s, scale_rows: 128, n: hd, k: inter, interleave: 0 });
    let mut want = st.alloc_zeros::<f32>(m * hd).unwrap();
    ops::wide_fp8_into(g, &act16.as_view(), &w, &mut want.as_view_mut(), WideZeros::default()).unwrap();
    let err = rel_err(&got, &st.clone_dtoh(&want).unwrap());
    assert!(err < 1e-4, "m={m}: the chained down is off a standalone one by {err:e}");
    (chained, memsets)
}
