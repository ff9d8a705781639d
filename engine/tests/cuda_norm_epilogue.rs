//! Decode's RMSNorm folded into the FP8 skinny GEMMs (`ops::NormEpi`, the `_norm` kernels;
//! the engine folds FP8 steps of one row) against the plain kernels (GPU machine only:
//! `cargo test -p engine --test cuda_norm_epilogue -- --ignored`), at 1, 3 and 8 rows, x
//! staged in shared memory (one row, k up to 12288) or loaded at every stage:
//! - a producer adds to the residual exactly what the plain kernel stores (the same f32
//!   add the norm kernel does), stores hw = bf16(y w) exactly, and each 16 columns' sum of
//!   squares to f32 rounding;
//! - a consumer stores the plain kernel's sums times each row's rsqrt(sum / k + eps), and
//!   with SwiGLU scales gate and up before it;
//! - the launchers refuse what the kernels cannot do, naming it.

mod cuda_common;

use cuda_common::{Rng, check, down, down_bf16, fp8_codes_and_scales, gpu_tuned, up, up_bf16};
use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, NormEpi};
use kernels::{Gpu, bf16};

/// The ring depths the epilogues run behind: the defaults, and the shallowest.
fn gpus() -> Vec<(Gpu, &'static str)> {
    vec![
        (gpu_tuned(|_| {}), "default rings"),
        (
            gpu_tuned(|t| {
                t.fp8_bulk_stages = 2;
                t.fp8_bulk_stages_small = 2;
            }),
            "2-stage rings",
        ),
    ]
}

/// A projection's FP8 codes with 128x128 block scales (codes 0x00..0x6f: finite e4m3
/// values).
struct Weights {
    codes: CudaSlice<u8>,
    scales: CudaSlice<f32>,
    n: usize,
    k: usize,
    interleave: usize,
}

impl Weights {
    fn new(g: &Gpu, r: &mut Rng, n: usize, k: usize, interleave: usize) -> Self {
        let (codes, scales) = fp8_codes_and_scales(r, n, k);
        Weights { codes: up(g, &codes), scales: up(g, &scales), n, k, interleave }
    }

    /// Run `f` with the matrix as the skinny GEMM takes it.
    fn with<R>(&self, f: impl FnOnce(&ops::Fp8Matrix<'_, '_>) -> R) -> R {
        let (cv, sv) = (self.codes.as_view(), self.scales.as_view());
        f(&ops::Fp8Matrix {
            codes: &cv,
            scale_inv: &sv,
            scale_rows: 128,
            n: self.n,
            k: self.k,
            interleave: self.interleave,
        })
    }
}

/// The plain kernel's y = x wᵀ [m, n].
fn plain(g: &Gpu, x: &CudaSlice<bf16>, w: &Weights) -> Vec<f32> {
    let m = x.len() / w.k;
    let mut y = g.stream().alloc_zeros::<f32>(m * w.n).unwrap();
    w.with(|m8| ops::skinny_gemm_fp8_into(g, &x.as_view(), m8, &mut y.as_view_mut())).unwrap();
    down(g, &y)
}

#[test]
#[ignore = "gpu"]
fn producer_adds_to_the_residual_and_stores_hw_and_sums_of_squares() {
    for (g, pipe) in gpus() {
        let mut r = Rng(41);
        // o_proj's and down's shapes at Qwen3-8B (n = 4096: 256 tiles, the persistent
        // grid's blocks loop at one block per SM), a small one, and one whose x is too long
        // to stage.
        for (n, k) in [(4096, 4096), (4096, 12288), (256, 512), (256, 16384)] {
            let w = Weights::new(&g, &mut r, n, k, 0);
            let nw: Vec<f32> = r.vec(n).iter().map(|v| 1.0 + v).collect();
            let dnw = up(&g, &nw);
            for m in [1, 3, 8] {
                let x = up_bf16(&g, &r.vec(m * k));
                let y0: Vec<f32> = r.vec(m * n).iter().map(|v| 8.0 * v).collect();
                {
                    let what = format!("{pipe} m={m} n={n} k={k}");
                    let sums = plain(&g, &x, &w);
                    let mut y = up(&g, &y0);
                    let mut hw = g.stream().alloc_zeros::<bf16>(m * n).unwrap();
                    let mut ss = g.stream().alloc_zeros::<f32>(m * ops::norm_parts(n)).unwrap();
                    w.with(|m8| {
                        let epi = NormEpi::AddNorm {
                            w: &dnw.as_view(),
                            hw: &mut hw.as_view_mut(),
                            ss: &mut ss.as_view_mut(),
                        };
                        ops::skinny_linear_norm_into(&g, &x.as_view(), m8, &mut y.as_view_mut(), epi)
                    })
                    .unwrap();
                    let (y, hw, ss) = (down(&g, &y), down_bf16(&g, &hw), down(&g, &ss));
                    for i in 0..m * n {
                        let want = y0[i] + sums[i];
                        assert_eq!(y[i].to_bits(), want.to_bits(), "{what}: residual[{i}]");
                        let h = bf16::from_f32(y[i] * nw[i % n]).to_f32();
                        assert_eq!(hw[i].to_bits(), h.to_bits(), "{what}: hw[{i}]");
                    }
                    let want: Vec<f32> = (0..m * n / 16)
                        .map(|t| {
                            let cols = &y[t * 16..(t + 1) * 16];
                            cols.iter().map(|&v| v as f64 * v as f64).sum::<f64>() as f32
                        })
                        .collect();
                    check(&format!("{what}: sums of squares"), &ss, &want, 1e-6, 1e-5);
                }
            }
        }
    }
}

/// Row m's scale for partial sums ss [m, parts] over k columns, in f64.
fn scales(ss: &[f32], m: usize, k: usize, eps: f32) -> Vec<f64> {
    let parts = ss.len() / m;
    (0..m)
        .map(|i| {
            let s: f64 = ss[i * parts..(i + 1) * parts].iter().map(|&v| v as f64).sum();
            1.0 / (s / k as f64 + eps as f64).sqrt()
        })
        .collect()
}

#[test]
#[ignore = "gpu"]
fn consumer_scales_each_row_before_storing_and_before_swiglu() {
    let eps = 1e-6f32;
    for (g, pipe) in gpus() {
        let mut r = Rng(43);
        // qkv's and gate|up's shapes at Qwen3-8B, small ones, and one whose x is too long
        // to stage.
        for (n, k, swiglu) in
            [(6144, 4096, false), (24576, 4096, true), (96, 256, false), (256, 256, true), (96, 16384, false)]
        {
            let w = Weights::new(&g, &mut r, n, k, if swiglu { n / 2 } else { 0 });
            let parts = ops::norm_parts(k);
            for m in [1, 3, 8] {
                let x = up_bf16(&g, &r.vec(m * k));
                // Sums of squares of rows with magnitudes of ~0.5 to ~40.
                let ss: Vec<f32> = (0..m * parts)
                    .map(|i| (r.next().abs() + 0.01) * (1 + 100 * (i / parts)) as f32)
                    .collect();
                let dss = up(&g, &ss);
                let sc = scales(&ss, m, k, eps);
                {
                    let what = format!("{pipe} m={m} n={n} k={k}");
                    let sums = plain(&g, &x, &w);
                    let epi = NormEpi::Scale { ss: &dss.as_view(), eps };
                    if !swiglu {
                        let mut y = g.stream().alloc_zeros::<f32>(m * n).unwrap();
                        w.with(|m8| {
                            ops::skinny_linear_norm_into(&g, &x.as_view(), m8, &mut y.as_view_mut(), epi)
                        })
                        .unwrap();
                        let want: Vec<f32> =
                            (0..m * n).map(|i| (sums[i] as f64 * sc[i / n]) as f32).collect();
                        let floor = want.iter().fold(0f32, |a, v| a.max(v.abs())) * 1e-6;
                        check(&what, &down(&g, &y), &want, floor, 1e-5);
                        continue;
                    }
                    let inter = n / 2;
                    let mut act = g.stream().alloc_zeros::<bf16>(m * inter).unwrap();
                    w.with(|m8| {
                        ops::skinny_swiglu_norm_into(&g, &x.as_view(), m8, &mut act.as_view_mut(), epi)
                    })
                    .unwrap();
                    // Interleaved rows: tile j holds gate 8j.. then up 8j.. (GATE_UP_GROUP).
                    let want: Vec<f32> = (0..m * inter)
                        .map(|i| {
                            let (row, c) = (i / inter, i % inter);
                            let base = row * n + (c / 8) * 16 + c % 8;
                            let gs = sums[base] as f64 * sc[row];
                            let us = sums[base + 8] as f64 * sc[row];
                            (gs / (1.0 + (-gs).exp()) * us) as f32
                        })
                        .collect();
                    let floor = want.iter().fold(0f32, |a, v| a.max(v.abs())) * 1e-3;
                    // bf16 output: half an ulp (2^-9) plus the sums' f32 rounding.
                    check(&format!("{what} swiglu"), &down_bf16(&g, &act), &want, floor, 5e-3);
                }
            }
        }
    }
}

#[test]
#[ignore = "gpu"]
fn norm_epilogue_launchers_refuse_what_the_kernels_cannot_do() {
    let g = gpu_tuned(|_| {});
    let mut r = Rng(47);
    let (m, k, inter) = (2, 256, 64);
    let w = Weights::new(&g, &mut r, 2 * inter, k, inter);
    let x = up_bf16(&g, &r.vec(m * k));
    let nw = up(&g, &vec![1f32; 2 * inter]);
    let mut hw = g.stream().alloc_zeros::<bf16>(m * 2 * inter).unwrap();
    let mut ss = g.stream().alloc_zeros::<f32>(m * 8).unwrap();
    let mut act = g.stream().alloc_zeros::<bf16>(m * inter).unwrap();
    // SwiGLU's output cannot join a residual.
    let e = w
        .with(|m8| {
            let epi =
                NormEpi::AddNorm { w: &nw.as_view(), hw: &mut hw.as_view_mut(), ss: &mut ss.as_view_mut() };
            ops::skinny_swiglu_norm_into(&g, &x.as_view(), m8, &mut act.as_view_mut(), epi)
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("SwiGLU output cannot join the residual"), "{e}");
    // Partial sums that are not 4 per row (16-byte copies).
    let odd = up(&g, &vec![1f32; m * 6]);
    let e = w
        .with(|m8| {
            let epi = NormEpi::Scale { ss: &odd.as_view(), eps: 1e-6 };
            ops::skinny_swiglu_norm_into(&g, &x.as_view(), m8, &mut act.as_view_mut(), epi)
        })
        .unwrap_err()
        .to_string();
    assert!(e.contains("6 norm partial sums per row"), "{e}");
}
