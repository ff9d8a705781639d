//! Experiment, GPU machine only (prints the speeds; asserts only correctness): decode GEMMs
//! at 16, 32 and 64 token rows (lab/cuda/wide_gemm.cu: 128-row tiles, x staged once per
//! stage in shared memory, split-K adding into y) against what the engine runs there now
//! (cuBLAS on bf16 weights) and against its skinny kernels 8 rows at a time, on Qwen3-8B's
//! four projection shapes, FP8 (f16 x) and bf16. Each matrix is held in enough copies,
//! run in turn, that no run finds its weights in L2. `cargo run -p kernels-lab --bin
//! wide_gemm`.

use kernels::cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use kernels::ops::{self, WeightLayout};
use kernels::{Gpu, GpuOptions, bf16, f16};
use kernels_lab::rng::Rng;
use kernels_lab::sources;
use kernels_lab::timing::{opt_in_blocks_per_sm, time_us_reps};

const ROWS: usize = 128;
const THREADS: u32 = 256;
const STAGES: usize = 4;
/// Bytes of weights each shape's copies add up to at least (L2 is 60 MB).
const COPY_BYTES: usize = 200 << 20;

/// One of the kernel's entry points, with its dynamic shared memory and blocks per SM.
struct Wide {
    f: CudaFunction,
    smem: u32,
    per_sm: usize,
}

impl Wide {
    fn new(module: &std::sync::Arc<kernels::cudarc::driver::CudaModule>, fp8: bool, m: usize) -> Self {
        let name = format!("wide_{}_m{m}", if fp8 { "fp8" } else { "bf16" });
        let f = module.load_function(&name).unwrap();
        let x_bytes = m * if fp8 { 256 } else { 128 };
        let smem = (STAGES * (ROWS * 128 + x_bytes)) as u32;
        let per_sm = opt_in_blocks_per_sm(&f, THREADS, smem) as usize;
        Wide { f, smem, per_sm }
    }

    /// Stages per split-K unit so that the grid fills `fill` x the SMs' resident blocks.
    fn per_unit(&self, g: &Gpu, n: usize, k: usize, fp8: bool, fill: usize) -> usize {
        let nch = k / if fp8 { 128 } else { 64 };
        let splits = (fill * self.per_sm * g.sms()).div_ceil(n / ROWS).clamp(1, nch);
        nch.div_ceil(splits)
    }

    #[allow(clippy::too_many_arguments)]
    fn run<X: kernels::cudarc::driver::DeviceRepr, W: kernels::cudarc::driver::DeviceRepr>(
        &self,
        g: &Gpu,
        x: &CudaSlice<X>,
        w: &CudaSlice<W>,
        s: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
        (n, k, fp8): (usize, usize, bool),
        per_unit: usize,
    ) {
        let nch = k / if fp8 { 128 } else { 64 };
        let units = n / ROWS * nch.div_ceil(per_unit);
        g.stream().memset_zeros(y).unwrap();
        let (ni, ki, pu) = (n as i32, k as i32, per_unit as i32);
        let mut b = g.stream().launch_builder(&self.f);
        b.arg(x).arg(w).arg(s).arg(y).arg(&ni).arg(&ki).arg(&pu);
        let cfg = LaunchConfig {
            grid_dim: (units as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: self.smem,
        };
        // SAFETY: x [m, k], w [n, k], scales [n / 128, k / 128], y [m, n], as the kernel reads.
        unsafe { b.launch(cfg) }.unwrap();
    }
}

/// The `_lb` form of an FP8 entry point (last-block split-K reduction, no zeroing of y):
/// its scratch of partial tiles and the tiles' arrival counters.
struct LastBlock {
    f: CudaFunction,
    scratch: CudaSlice<f32>,
    counters: CudaSlice<u32>,
}

impl LastBlock {
    /// For m rows of an [n, k] FP8 matrix at up to `most_splits` splits.
    fn new(
        g: &Gpu,
        module: &std::sync::Arc<kernels::cudarc::driver::CudaModule>,
        (m, n): (usize, usize),
        most_splits: usize,
        smem: u32,
    ) -> Self {
        let f = module.load_function(&format!("wide_fp8_m{m}_lb")).unwrap();
        opt_in_blocks_per_sm(&f, THREADS, smem);
        let st = g.stream();
        LastBlock {
            f,
            scratch: st.alloc_zeros(most_splits * m * n).unwrap(),
            counters: st.alloc_zeros(n / ROWS).unwrap(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        g: &Gpu,
        x: &CudaSlice<f16>,
        w: &CudaSlice<u8>,
        s: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
        (n, k): (usize, usize),
        per_unit: usize,
        smem: u32,
    ) {
        let units = n / ROWS * (k / 128).div_ceil(per_unit);
        let (ni, ki, pu) = (n as i32, k as i32, per_unit as i32);
        let mut b = g.stream().launch_builder(&self.f);
        b.arg(x)
            .arg(w)
            .arg(s)
            .arg(y)
            .arg(&ni)
            .arg(&ki)
            .arg(&pu)
            .arg(&mut self.scratch)
            .arg(&mut self.counters);
        let cfg = LaunchConfig {
            grid_dim: (units as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: smem,
        };
        // SAFETY: as `Wide::run`, and the scratch holds every split's [m, n] partial.
        unsafe { b.launch(cfg) }.unwrap();
    }
}

/// max |a - b| / max |b|.
fn rel_err(a: &[f32], b: &[f32]) -> f32 {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs())) / scale
}

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
    let mut totals = std::collections::BTreeMap::<String, f32>::new();
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
            // bf16 weights: the bf16 model's, or for FP8 shapes what cuBLAS reads now.
            let wbh: Vec<bf16> = (0..n * k).map(|_| bf16::from_f32(r.unit() * 0.05)).collect();
            let wb: Vec<CudaSlice<bf16>> = (0..copies).map(|_| st.clone_htod(&wbh).unwrap()).collect();
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
                            let wv = w8[c].as_view();
                            let sv = s.as_view();
                            let m8 = ops::Fp8Matrix {
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
                let wide = Wide::new(&module, fp8, m);
                let mut rows: Vec<(String, f32, Option<f32>)> = Vec::new();
                for fill in [1usize, 2, 4] {
                    let pu = wide.per_unit(&g, n, k, fp8, fill);
                    let check = |y: &mut CudaSlice<f32>| {
                        if fp8 {
                            wide.run(&g, &xh, &w8[0], &s, y, (n, k, fp8), pu);
                        } else {
                            wide.run(&g, &xb, &wb[0], &s, y, (n, k, fp8), pu);
                        }
                        rel_err(&st.clone_dtoh(y).unwrap(), &want)
                    };
                    let err = check(&mut y);
                    assert!(
                        err < 1e-4,
                        "{wname} {name} m={m} fill {fill}: wide kernel off by {err:e} of max |y|"
                    );
                    let us = time_us_reps(&g, 4, || {
                        for c in 0..copies {
                            if fp8 {
                                wide.run(&g, &xh, &w8[c], &s, &mut y, (n, k, fp8), pu);
                            } else {
                                wide.run(&g, &xb, &wb[c], &s, &mut y, (n, k, fp8), pu);
                            }
                        }
                    }) / copies as f32;
                    let units = n / ROWS * (k / if fp8 { 128 } else { 64 }).div_ceil(pu);
                    rows.push((
                        format!("wide, {units} units of {pu} stages ({} per SM)", wide.per_sm),
                        us,
                        Some(err),
                    ));
                    if fp8 && m <= 32 {
                        let splits = (k / 128).div_ceil(pu);
                        let mut lb = LastBlock::new(&g, &module, (m, n), splits, wide.smem);
                        lb.run(&g, &xh, &w8[0], &s, &mut y, (n, k), pu, wide.smem);
                        let err = rel_err(&st.clone_dtoh(&y).unwrap(), &want);
                        assert!(
                            err < 1e-4,
                            "{wname} {name} m={m} fill {fill}: last-block form off by {err:e}"
                        );
                        let us = time_us_reps(&g, 4, || {
                            for wc in &w8 {
                                lb.run(&g, &xh, wc, &s, &mut y, (n, k), pu, wide.smem);
                            }
                        }) / copies as f32;
                        rows.push((format!("wide last-block, {units} units of {pu} stages"), us, Some(err)));
                    }
                }
                // The engine's form of the FP8 kernel (kernels/cuda/wide_fp8.cu: cluster
                // split-K, no zeroing), where it takes this many rows.
                if fp8 && m <= ops::WIDE_MAX_ROWS {
                    let op = |y: &mut CudaSlice<f32>, c: usize| {
                        let (wv, sv) = (w8[c].as_view(), s.as_view());
                        let m8 = ops::Fp8Matrix {
                            codes: &wv,
                            scale_inv: &sv,
                            scale_rows: 128,
                            n,
                            k,
                            interleave: 0,
                        };
                        ops::wide_fp8_into(&g, &xh.as_view(), &m8, &mut y.as_view_mut()).unwrap();
                    };
                    op(&mut y, 0);
                    let err = rel_err(&st.clone_dtoh(&y).unwrap(), &want);
                    assert!(err < 1e-4, "{wname} {name} m={m}: engine wide op off by {err:e} of max |y|");
                    let us = time_us_reps(&g, 4, || {
                        for c in 0..copies {
                            op(&mut y, c);
                        }
                    }) / copies as f32;
                    rows.push(("engine wide_fp8 op".to_string(), us, Some(err)));
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
                let best_wide =
                    rows.iter().filter(|r| r.0.starts_with("wide,")).map(|r| r.1).fold(f32::MAX, f32::min);
                *totals.entry(format!("{wname} m={m} wide (best fill per shape)")).or_insert(0.0) +=
                    best_wide * 36.0;
                for (what, us, err) in rows {
                    let bytes = if what.starts_with("cuBLAS") { n * k * 2 } else { wbytes };
                    let err = err.map(|e| format!("{e:.1e}")).unwrap_or_default();
                    println!(
                        "| {wname} | {name} {n}x{k} | {m} | {what} | {us:.1} | {:.2} | {err} |",
                        bytes as f64 / (us as f64 * 1e-6) / 1e12
                    );
                    if !what.starts_with("wide") {
                        let key = format!("{wname} m={m} {}", what.split(',').next().unwrap());
                        *totals.entry(key).or_insert(0.0) += us * 36.0;
                    }
                }
            }
        }
    }
    println!("\nAll 144 layer projections (36 layers x the four shapes), us:");
    for (k, us) in totals {
        println!("  {k}: {:.0} us", us);
    }
}
