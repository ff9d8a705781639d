//! Experiment, GPU machine only (prints the speeds; asserts only correctness): decode GEMMs
//! at 16, 32 and 64 token rows with 64-row tiles and x staged once per stage, on Qwen3-8B's
//! four projection shapes, FP8 (f16 x) and bf16, against what the engine ran there before
//! (cuBLAS on bf16 weights) and against its skinny kernels 8 rows at a time. FP8 at 16 and
//! 32 rows is the production kernel (kernels/cuda/wide_fp8.cu): its entries at several split
//! counts, and the engine's ops as a step calls them (gate|up: SwiGLU fused with no split,
//! against the split GEMM and the swiglu kernel after it); FP8 at 64 rows is its main loop
//! in the lab's 64-row entry (the FP8 wide kernels read the codes' wide copy,
//! `ops::wide_tiles`), bf16 the lab's own form (lab/cuda/wide_gemm.cu), row-major and
//! tiled (bulk copies, as the FP8 kernel since step 74); last, the 144 bf16 projections in
//! one graph, cuBLAS against the bulk form chained with PDL (`bf16_chain`). Each matrix
//! is held in enough copies, run in turn, that no run finds its weights in L2. `cargo run
//! -p kernels-lab --bin wide_gemm`.

use kernels::cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg,
};
use kernels::ops::{self, Fp8Matrix, WeightLayout, WideFp8};
use kernels::{Gpu, GpuOptions, bf16, f16};
use kernels_lab::rel_err;
use kernels_lab::rng::Rng;
use kernels_lab::sources;
use kernels_lab::timing::{launch_pdl, opt_in_blocks_per_sm, time_us_reps};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Weight rows per block and threads (4 warps of 16 rows), as wide_fp8.cu's.
const ROWS: usize = 64;
const THREADS: u32 = 128;
const STAGES: usize = 4;
/// Bytes of weights each shape's copies add up to at least (L2 is 60 MB).
const COPY_BYTES: usize = 200 << 20;

/// One wide entry point (production or lab), with its dynamic shared memory and blocks per
/// SM. Every one takes (x, w, scale_inv, y, M, N, K, R, il, splits).
struct Wide {
    f: CudaFunction,
    smem: u32,
    per_sm: usize,
    /// k of one ring stage: 128 (FP8) or 64 (bf16).
    stage_k: usize,
}

impl Wide {
    /// `name` at `m` token rows (the form's; x rows are 256 bytes per stage either way).
    fn new(module: &Arc<CudaModule>, name: &str, m: usize, fp8: bool) -> Self {
        let f = module.load_function(name).unwrap();
        let x_bytes = m * if fp8 { 256 } else { 128 };
        let smem = (STAGES * (ROWS * 128 + x_bytes)) as u32;
        let per_sm = opt_in_blocks_per_sm(&f, THREADS, smem) as usize;
        Wide { f, smem, per_sm, stage_k: if fp8 { 128 } else { 64 } }
    }

    /// Blocks per tile as the production launcher picks them (kernels/src/ops/wide.rs): the
    /// most that the SMs' resident blocks hold at once.
    fn engine_splits(&self, g: &Gpu, n: usize, k: usize) -> usize {
        self.no_idle(k, self.per_sm * g.sms() / (n / ROWS))
    }

    /// `want` blocks per tile of k, at most one per stage, then the fewest that keep the
    /// same stages per block (none idle).
    fn no_idle(&self, k: usize, want: usize) -> usize {
        kernels_lab::no_idle(k / self.stage_k, want)
    }

    /// One launch at `splits` blocks per tile, y zeroed first where they add.
    #[allow(clippy::too_many_arguments)]
    fn run<X: DeviceRepr, W: DeviceRepr, O: DeviceRepr + kernels::cudarc::driver::ValidAsZeroBits>(
        &self,
        g: &Gpu,
        x: &CudaSlice<X>,
        w: &CudaSlice<W>,
        s: &CudaSlice<f32>,
        y: &mut CudaSlice<O>,
        (m, n, k, il): (usize, usize, usize, usize),
        splits: usize,
    ) {
        if splits > 1 {
            g.stream().memset_zeros(y).unwrap();
        }
        let (mi, ni, ki, ri, ili, si) = (m as i32, n as i32, k as i32, 128i32, il as i32, splits as i32);
        let mut b = g.stream().launch_builder(&self.f);
        // No buffer to clear for a next GEMM (a null `clear`).
        let (clear, clear_n4) = (0u64, 0i32);
        b.arg(x).arg(w).arg(s).arg(y).arg(&mi).arg(&ni).arg(&ki).arg(&ri).arg(&ili).arg(&si);
        b.arg(&clear).arg(&clear_n4);
        let cfg = LaunchConfig {
            grid_dim: ((n / ROWS * splits) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: self.smem,
        };
        // SAFETY: x [m, k], w [n, k] (FP8: the wide copy), scales [n / 128, k / 128], y [m, n] (or the act
        // [m, n / 2]), as the kernel reads and writes them.
        unsafe { b.launch(cfg) }.unwrap();
    }
}

/// One row of the table: what ran, its time, and its error against the reference if any.
type Row = (String, f32, Option<f32>);

fn main() {
    let opts = GpuOptions::from_env().unwrap();
    let g = Gpu::new(&opts).unwrap();
    let st = g.stream().clone();
    let module = kernels_lab::module(&g, &opts, "wide_gemm.cu", sources::WIDE_GEMM);
    let mut r = Rng(7);
    println!("| weights | shape | m | kernel | us | TB/s | err vs skinny |");
    let shapes = [
        ("qkv", 6144usize, 4096usize),
        ("o_proj", 4096, 4096),
        ("gate|up", 24576, 4096),
        ("down", 4096, 12288),
    ];
    let mut totals = BTreeMap::<String, f32>::new();
    for fp8 in [true, false] {
        let wname = if fp8 { "FP8" } else { "bf16" };
        for (name, n, k) in shapes {
            let wbytes = n * k * if fp8 { 1 } else { 2 };
            let copies = COPY_BYTES.div_ceil(wbytes).max(2);
            let scales: Vec<f32> = (0..n / 128 * (k / 128)).map(|_| r.scale()).collect();
            let s = st.clone_htod(&scales).unwrap();
            // One random matrix, uploaded into every copy (distinct buffers are what keeps
            // the runs out of L2).
            let codes: Vec<u8> = if fp8 { (0..n * k).map(|_| r.code()).collect() } else { vec![] };
            let w8: Vec<CudaSlice<u8>> =
                if fp8 { (0..copies).map(|_| st.clone_htod(&codes).unwrap()).collect() } else { vec![] };
            // The same codes in the wide kernels' layout.
            let w8t: Vec<CudaSlice<u8>> = if fp8 {
                let t = ops::wide_tiles(&codes, n, k);
                (0..copies).map(|_| st.clone_htod(&t).unwrap()).collect()
            } else {
                vec![]
            };
            // bf16 weights: the bf16 model's, or for FP8 shapes what cuBLAS reads there.
            let wbh: Vec<bf16> = (0..n * k).map(|_| bf16::from_f32(r.unit() * 0.05)).collect();
            let wb: Vec<CudaSlice<bf16>> = (0..copies).map(|_| st.clone_htod(&wbh).unwrap()).collect();
            // bf16 weights tiled as the FP8 wide kernel's codes ([n, 2k] bytes), for the bf16
            // bulk form.
            let wbt: Vec<CudaSlice<u8>> = if fp8 {
                vec![]
            } else {
                let bytes: Vec<u8> = wbh.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect();
                let t = ops::wide_tiles(&bytes, n, 2 * k);
                (0..copies).map(|_| st.clone_htod(&t).unwrap()).collect()
            };
            for m in [16usize, 32, 64] {
                let xf: Vec<f32> = (0..m * k).map(|_| r.unit()).collect();
                let xh = st.clone_htod(&xf.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>()).unwrap();
                let xb = st.clone_htod(&xf.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>()).unwrap();
                let mut y = st.alloc_zeros::<f32>(m * n).unwrap();
                let mut y_ref = st.alloc_zeros::<f32>(m * n).unwrap();
                // The engine's skinny kernel 8 rows at a time: the reference and a timing.
                let skinny = |y: &mut CudaSlice<f32>, c: usize| {
                    for r0 in (0..m).step_by(8) {
                        let mut ys = y.slice_mut(r0 * n..(r0 + 8) * n);
                        if fp8 {
                            let (wv, sv) = (w8[c].as_view(), s.as_view());
                            let m8 = Fp8Matrix {
                                codes: &wv,
                                scale_inv: &sv,
                                scale_rows: 128,
                                n,
                                k,
                                interleave: 0,
                            };
                            ops::skinny_gemm_fp8_into(&g, &xh.slice(r0 * k..(r0 + 8) * k), &m8, &mut ys)
                                .unwrap();
                        } else {
                            let x8 = xb.slice(r0 * k..(r0 + 8) * k);
                            ops::skinny_gemm_into(
                                &g,
                                &x8,
                                &wb[c].as_view(),
                                WeightLayout::Rows,
                                n,
                                k,
                                &mut ys,
                            )
                            .unwrap();
                        }
                    }
                };
                skinny(&mut y_ref, 0);
                let want = st.clone_dtoh(&y_ref).unwrap();
                let mut rows: Vec<Row> = Vec::new();
                // The wide kernel at split counts from 1 to 32 (as many as the stages allow
                // without idle blocks), the production rule's among them.
                // Each wide entry and whether it reads the tiled (wide) copy: FP8 always; bf16
                // row-major, then tiled with bulk copies.
                let entries: Vec<(String, bool)> = match (fp8, m) {
                    (true, 64) => vec![("wide_fp8_m64_r1".to_string(), true)],
                    (true, _) => vec![(format!("wide_fp8_m{m}"), true)],
                    (false, _) => {
                        vec![(format!("wide_bf16_m{m}"), false), (format!("wide_bf16_bulk_m{m}"), true)]
                    }
                };
                for (entry, tiled) in entries {
                    let wide = Wide::new(&module, &entry, m, fp8);
                    let mut counts: Vec<usize> = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 24, 32]
                        .iter()
                        .map(|&s| wide.no_idle(k, s))
                        .collect();
                    counts.dedup();
                    let engine_count = wide.engine_splits(&g, n, k);
                    let mut best_wide = f32::MAX;
                    for splits in counts {
                        let shape = (m, n, k, 0);
                        let launch = |y: &mut CudaSlice<f32>, c: usize| match (fp8, tiled) {
                            (true, _) => wide.run(&g, &xh, &w8t[c], &s, y, shape, splits),
                            (false, true) => wide.run(&g, &xb, &wbt[c], &s, y, shape, splits),
                            (false, false) => wide.run(&g, &xb, &wb[c], &s, y, shape, splits),
                        };
                        launch(&mut y, 0);
                        let err = rel_err(&st.clone_dtoh(&y).unwrap(), &want);
                        assert!(err < 1e-4, "{wname} {name} m={m} {entry} {splits} splits: off by {err:e}");
                        let us = time_us_reps(&g, 4, || {
                            for c in 0..copies {
                                launch(&mut y, c);
                            }
                        }) / copies as f32;
                        best_wide = best_wide.min(us);
                        let mark = if splits == engine_count { ", the launcher's rule" } else { "" };
                        let what = format!("wide {entry}, {splits} splits ({} per SM){mark}", wide.per_sm);
                        rows.push((what, us, Some(err)));
                    }
                    *totals
                        .entry(format!("{wname} m={m} {entry} (best split count per shape)"))
                        .or_default() += best_wide * 36.0;
                }
                if fp8 && m <= ops::WIDE_MAX_ROWS {
                    let step_us = engine_ops(&g, (name, n, k, m), (&w8t, &s, &xh), &want, &mut rows);
                    *totals.entry(format!("FP8 m={m} engine ops as a step calls them")).or_default() +=
                        step_us * 36.0;
                }
                let us = time_us_reps(&g, 4, || {
                    for c in 0..copies {
                        skinny(&mut y_ref, c);
                    }
                }) / copies as f32;
                rows.push((format!("skinny x {} launches", m / 8), us, None));
                let us = time_us_reps(&g, 4, || {
                    for c in wb.iter() {
                        ops::gemm_into(&g, &xb.as_view(), &c.as_view(), n, k, &mut y.as_view_mut()).unwrap();
                    }
                }) / copies as f32;
                rows.push(("cuBLAS, bf16 weights".to_string(), us, None));
                for (what, us, err) in rows {
                    let bytes = if what.starts_with("cuBLAS") { n * k * 2 } else { wbytes };
                    let err = err.map(|e| format!("{e:.1e}")).unwrap_or_default();
                    println!(
                        "| {wname} | {name} {n}x{k} | {m} | {what} | {us:.1} | {:.2} | {err} |",
                        bytes as f64 / (us as f64 * 1e-6) / 1e12
                    );
                    if what.starts_with("skinny") || what.starts_with("cuBLAS") {
                        let key = format!("{wname} m={m} {}", what.split(',').next().unwrap());
                        *totals.entry(key).or_default() += us * 36.0;
                    }
                }
            }
        }
    }
    println!("\nAll 144 layer projections (36 layers x the four shapes), us:");
    for (k, us) in totals {
        println!("  {k}: {:.0} us", us);
    }
    println!("\nbf16: the 144 projections chained as a step runs them (one graph), us:");
    for m in [16usize, 32] {
        let (cublas, wide) = bf16_chain(&g, &module, &mut r, m);
        println!(
            "  m={m}: cuBLAS {cublas:.0}; wide_bf16_bulk with PDL, each split y cleared by the GEMM before {wide:.0}"
        );
    }
}

/// Layers the bf16 chain cycles over 36: 3 GB in each layout, so nothing stays in L2.
const CHAIN_LAYERS: usize = 8;

/// Qwen3-8B's 36 layers of qkv, o_proj, gate|up (plain, into f32) and down at `m` rows of
/// bf16 x in one graph: cuBLAS on row-major weights (the engine's bf16 path past 8 rows),
/// against the lab's bulk bf16 form on tiled weights launched with PDL at the launcher's
/// split rule, each split GEMM's y cleared by the GEMM before it (layer 0's qkv: a memset).
/// Asserts that the last down's sums agree. Returns (cuBLAS, wide) in us per chain.
fn bf16_chain(g: &Gpu, module: &Arc<CudaModule>, r: &mut Rng, m: usize) -> (f32, f32) {
    let st = g.stream();
    let (hd, inter) = (4096usize, 12288usize);
    let shapes = [(6144usize, hd), (hd, hd), (2 * inter, hd), (hd, inter)];
    // Per layer and shape: (row-major, tiled bytes).
    let layers: Vec<Vec<(CudaSlice<bf16>, CudaSlice<u8>)>> = (0..CHAIN_LAYERS)
        .map(|_| {
            shapes
                .iter()
                .map(|&(n, k)| {
                    let w: Vec<bf16> = (0..n * k).map(|_| bf16::from_f32(r.unit() * 0.05)).collect();
                    let bytes: Vec<u8> = w.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect();
                    (st.clone_htod(&w).unwrap(), st.clone_htod(&ops::wide_tiles(&bytes, n, 2 * k)).unwrap())
                })
                .collect()
        })
        .collect();
    let xb = st.clone_htod(&(0..m * hd).map(|_| bf16::from_f32(r.unit())).collect::<Vec<_>>()).unwrap();
    let act =
        st.clone_htod(&(0..m * inter).map(|_| bf16::from_f32(r.unit() * 0.1)).collect::<Vec<_>>()).unwrap();
    let mut ys: Vec<CudaSlice<f32>> =
        [6144, hd, 2 * inter].iter().map(|&n| st.alloc_zeros(m * n).unwrap()).collect();
    let wide = Wide::new(module, &format!("wide_bf16_bulk_m{m}"), m, false);
    let cublas = |ys: &mut [CudaSlice<f32>]| {
        for li in 0..36 {
            let l = &layers[li % CHAIN_LAYERS];
            for (i, &(n, k)) in shapes.iter().enumerate() {
                let x = if i == 3 { act.as_view() } else { xb.as_view() };
                let y = &mut ys[if i == 3 { 1 } else { i }];
                ops::gemm_into(g, &x, &l[i].0.as_view(), n, k, &mut y.as_view_mut()).unwrap();
            }
        }
    };
    // i's y and the y it clears for the next split GEMM: qkv clears o (o_proj's), gate|up
    // clears o (down's), down clears qkv (the next layer's).
    let (y_of, clears) = ([0usize, 1, 2, 1], [Some(1usize), None, Some(1), Some(0)]);
    let chained = |ys: &mut [CudaSlice<f32>]| {
        for li in 0..36 {
            let l = &layers[li % CHAIN_LAYERS];
            for (i, &(n, k)) in shapes.iter().enumerate() {
                let splits = wide.engine_splits(g, n, k);
                // Nothing clears gate|up's y (the step's SwiGLU form never splits; this plain
                // one does not at Qwen3-8B's 384 tiles on 132 SMs), nor layer 0's qkv.
                if splits > 1 && ((li == 0 && i == 0) || i == 2) {
                    st.memset_zeros(&mut ys[y_of[i]]).unwrap();
                }
                let x = if i == 3 { &act } else { &xb };
                let (clear, clear_n4) = match clears[i] {
                    Some(c) => (ys[c].device_ptr(st).0, (ys[c].len() / 4) as u64),
                    None => (0, 0),
                };
                let mut args = [
                    x.device_ptr(st).0,
                    l[i].1.device_ptr(st).0,
                    0,
                    ys[y_of[i]].device_ptr(st).0,
                    m as u64,
                    n as u64,
                    k as u64,
                    128,
                    0,
                    splits as u64,
                    clear,
                    clear_n4,
                ];
                let grid = (n / ROWS * splits) as u32;
                launch_pdl(g, &wide.f, grid, THREADS, wide.smem, &mut args);
            }
        }
    };
    cublas(&mut ys);
    let want = st.clone_dtoh(&ys[1]).unwrap();
    chained(&mut ys);
    let err = rel_err(&st.clone_dtoh(&ys[1]).unwrap(), &want);
    assert!(err < 1e-4, "bf16 chain m={m}: the wide chain's last down is off cuBLAS's by {err:e}");
    let cublas_us = time_us_reps(g, 2, || cublas(&mut ys));
    let wide_us = time_us_reps(g, 2, || chained(&mut ys));
    (cublas_us, wide_us)
}

/// The engine's wide FP8 ops on one shape at m rows (`w8`: the wide copies), timed over the weight copies into
/// `rows`: `wide_fp8_into` (y zeroed inside where K splits); for gate|up also the SwiGLU op
/// the step runs (no split, act in f16) against the split GEMM into f32 and the swiglu
/// kernel (act in bf16), checked against each other. Returns the time of the op the step
/// calls for this shape.
fn engine_ops(
    g: &Gpu,
    (name, n, k, m): (&str, usize, usize, usize),
    (w8, s, xh): (&[CudaSlice<u8>], &CudaSlice<f32>, &CudaSlice<f16>),
    want: &[f32],
    rows: &mut Vec<Row>,
) -> f32 {
    let st = g.stream();
    let copies = w8.len();
    let mut y = st.alloc_zeros::<f32>(m * n).unwrap();
    let sv = s.as_view();
    let gemm = |y: &mut CudaSlice<f32>, c: usize, il: usize| {
        let wv = w8[c].as_view();
        let m8 = WideFp8(Fp8Matrix { codes: &wv, scale_inv: &sv, scale_rows: 128, n, k, interleave: il });
        ops::wide_fp8_into(g, &xh.as_view(), &m8, &mut y.as_view_mut(), Default::default()).unwrap();
    };
    gemm(&mut y, 0, 0);
    let err = rel_err(&st.clone_dtoh(&y).unwrap(), want);
    assert!(err < 1e-4, "FP8 {name} m={m}: engine wide op off by {err:e} of max |y|");
    let op_us = time_us_reps(g, 4, || {
        for c in 0..copies {
            gemm(&mut y, c, 0);
        }
    }) / copies as f32;
    rows.push(("engine wide_fp8 op".to_string(), op_us, Some(err)));
    if name != "gate|up" {
        return op_us;
    }
    // gate|up as the step runs it: the codes read as interleaved by 8 (random codes, so any
    // layout times the same), SwiGLU fused with no split.
    let inter = n / 2;
    let mut act = st.alloc_zeros::<f16>(m * inter).unwrap();
    let mut act_b = st.alloc_zeros::<bf16>(m * inter).unwrap();
    let swiglu = |act: &mut CudaSlice<f16>, c: usize| {
        let wv = w8[c].as_view();
        let m8 = WideFp8(Fp8Matrix { codes: &wv, scale_inv: &sv, scale_rows: 128, n, k, interleave: inter });
        ops::wide_fp8_swiglu_into(g, &xh.as_view(), &m8, &mut act.as_view_mut(), None).unwrap();
    };
    let split_then_swiglu = |y: &mut CudaSlice<f32>, act_b: &mut CudaSlice<bf16>, c: usize| {
        gemm(y, c, inter);
        ops::swiglu_into(g, &y.as_view(), inter, true, &mut act_b.as_view_mut()).unwrap();
    };
    swiglu(&mut act, 0);
    split_then_swiglu(&mut y, &mut act_b, 0);
    let fused: Vec<f32> = st.clone_dtoh(&act).unwrap().iter().map(|v| v.to_f32()).collect();
    let split: Vec<f32> = st.clone_dtoh(&act_b).unwrap().iter().map(|v| v.to_f32()).collect();
    let err = rel_err(&fused, &split);
    assert!(err < 1e-2, "FP8 gate|up m={m}: fused SwiGLU off the split GEMM + swiglu by {err:e}");
    let fused_us = time_us_reps(g, 4, || {
        for c in 0..copies {
            swiglu(&mut act, c);
        }
    }) / copies as f32;
    let split_us = time_us_reps(g, 4, || {
        for c in 0..copies {
            split_then_swiglu(&mut y, &mut act_b, c);
        }
    }) / copies as f32;
    rows.push(("engine wide_fp8_swiglu op (SwiGLU fused, no split)".to_string(), fused_us, None));
    rows.push(("engine wide_fp8 op + swiglu kernel".to_string(), split_us, Some(err)));
    fused_us
}
