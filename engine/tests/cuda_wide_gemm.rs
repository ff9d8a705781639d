//! The wide FP8 GEMM (9-16 token rows, kernels/cuda/wide_fp8.cu) against an f64 reference on
//! fresh random inputs (GPU machine only: `cargo test -p engine --test cuda_wide_gemm --
//! --ignored`): f16 and bf16 x, 128-row and per-row scales, K split over clusters of 1-8
//! blocks, row counts that fill part of a token group; and gate|up with SwiGLU over
//! interleaved rows. Errors are judged relative to sum |x w| (f32 accumulation order).

mod cuda_common;

use cuda_common::skinny::{e4m3_value, random_e4m3_codes};
use cuda_common::{Rng, check, down, gpu, up};
use kernels::ops::{self, Fp8Matrix};
use kernels::{bf16, f16};

/// Real weights of an [n, k] FP8 matrix whose scales cover `rows_per` rows each.
fn dequant(codes: &[u8], scales: &[f32], (n, k): (usize, usize), rows_per: usize) -> Vec<f32> {
    let sc = k.div_ceil(128);
    (0..n * k).map(|i| e4m3_value(codes[i]) * scales[(i / k / rows_per) * sc + (i % k) / 128]).collect()
}

/// (err / sum|xw|) of y [m, n] against x [m, k] w [n, k] in f64.
fn rel_errors(got: &[f32], x: &[f32], w: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f32> {
    let mut err = vec![0f32; m * n];
    for t in 0..m {
        for j in 0..n {
            let (xs, ws) = (&x[t * k..][..k], &w[j * k..][..k]);
            let want: f64 = xs.iter().zip(ws).map(|(a, b)| *a as f64 * *b as f64).sum();
            let mag: f64 = xs.iter().zip(ws).map(|(a, b)| (*a as f64 * *b as f64).abs()).sum();
            err[t * n + j] = ((got[t * n + j] as f64 - want) / mag.max(1e-30)) as f32;
        }
    }
    err
}

#[test]
#[ignore = "gpu"]
fn wide_fp8_matches_f64_reference() {
    let g = gpu();
    let mut r = Rng(31);
    // (n, k): 2 stages (at most 2 blocks per tile), o_proj's 4096 x 4096 at 16 tiles'
    // width, down's k, and a grid past the SMs (no split).
    for (n, k) in [(256usize, 256usize), (1024, 4096), (256, 12288), (12288, 1024)] {
        let codes = random_e4m3_codes(&mut r, n * k);
        let dcodes = up(&g, &codes);
        let sc = k.div_ceil(128);
        for rows_per in [128usize, 1] {
            let scales: Vec<f32> =
                (0..n.div_ceil(rows_per) * sc).map(|_| (r.next().abs() + 0.1) / 64.0).collect();
            let w = dequant(&codes, &scales, (n, k), rows_per);
            let ds = up(&g, &scales);
            let (cv, sv) = (dcodes.as_view(), ds.as_view());
            let m8 = Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows: rows_per, n, k, interleave: 0 };
            for m in [9usize, 12, 15, 16] {
                let raw = r.vec(m * k);
                let mut y = g.stream().alloc_zeros::<f32>(m * n).unwrap();
                // f16 x, as the `_f16` norms write it.
                let xh: Vec<f16> = raw.iter().map(|&v| f16::from_f32(v)).collect();
                ops::wide_fp8_into(&g, &up(&g, &xh).as_view(), &m8, &mut y.as_view_mut()).unwrap();
                let x: Vec<f32> = xh.iter().map(|v| v.to_f32()).collect();
                let what =
                    format!("wide fp8 f16 x, scales/{rows_per} rows m={m} n={n} k={k} (err / sum|xw|)");
                check(&what, &rel_errors(&down(&g, &y), &x, &w, (m, n, k)), &vec![0.0; m * n], 1.0, 1e-5);
                // bf16 x (o_proj's), taken to f16 by the kernel: exact for these values.
                let xb: Vec<bf16> = raw.iter().map(|&v| bf16::from_f32(v)).collect();
                ops::wide_fp8_into(&g, &up(&g, &xb).as_view(), &m8, &mut y.as_view_mut()).unwrap();
                let x: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
                let what =
                    format!("wide fp8 bf16 x, scales/{rows_per} rows m={m} n={n} k={k} (err / sum|xw|)");
                check(&what, &rel_errors(&down(&g, &y), &x, &w, (m, n, k)), &vec![0.0; m * n], 1.0, 1e-5);
            }
        }
    }
    // Refused shapes name the problem.
    let codes = up(&g, &vec![0u8; 200 * 256]);
    let s = up(&g, &[1f32; 2 * 2]);
    let (cv, sv) = (codes.as_view(), s.as_view());
    let bad = Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows: 128, n: 200, k: 256, interleave: 0 };
    let x = up(&g, &vec![f16::ZERO; 16 * 256]);
    let mut y = g.stream().alloc_zeros::<f32>(16 * 200).unwrap();
    let e = ops::wide_fp8_into(&g, &x.as_view(), &bad, &mut y.as_view_mut()).unwrap_err().to_string();
    assert!(e.contains("multiple of 128"), "{e}");
}

/// SiLU(g) * u in f64.
fn swiglu_f64(g: f64, u: f64) -> f64 {
    g / (1.0 + (-g).exp()) * u
}

#[test]
#[ignore = "gpu"]
fn wide_fp8_swiglu_matches_f64_reference() {
    let g = gpu();
    let mut r = Rng(37);
    for (inter, k) in [(512usize, 1024usize), (1536, 4096)] {
        let n = 2 * inter;
        let sc = k.div_ceil(128);
        let codes = random_e4m3_codes(&mut r, n * k);
        let scales: Vec<f32> = (0..n.div_ceil(128) * sc).map(|_| (r.next().abs() + 0.1) / 64.0).collect();
        // Real weights [gate; up] in checkpoint order; the GPU gets the codes interleaved by 8
        // with the scales kept in that order (as the engine uploads them).
        let w = dequant(&codes, &scales, (n, k), 128);
        let half = inter * k;
        let dcodes = up(&g, &ops::interleave_gate_up(&codes[..half], &codes[half..], k));
        let ds = up(&g, &scales);
        let (cv, sv) = (dcodes.as_view(), ds.as_view());
        let m8 = Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows: 128, n, k, interleave: inter };
        for m in [9usize, 13, 16] {
            let xh: Vec<f16> = r.vec(m * k).iter().map(|&v| f16::from_f32(v)).collect();
            let x: Vec<f32> = xh.iter().map(|v| v.to_f32()).collect();
            let mut act = g.stream().alloc_zeros::<f16>(m * inter).unwrap();
            ops::wide_fp8_swiglu_into(&g, &up(&g, &xh).as_view(), &m8, &mut act.as_view_mut()).unwrap();
            let got: Vec<f32> = down(&g, &act).iter().map(|v| v.to_f32()).collect();
            let dot = |t: usize, j: usize| -> f64 {
                x[t * k..][..k].iter().zip(&w[j * k..][..k]).map(|(a, b)| *a as f64 * *b as f64).sum()
            };
            let want: Vec<f32> = (0..m * inter)
                .map(|i| {
                    let (t, c) = (i / inter, i % inter);
                    swiglu_f64(dot(t, c), dot(t, inter + c)) as f32
                })
                .collect();
            // bf16 rounding of the act (then f16, exact for these magnitudes): 2^-8 relative,
            // with a floor of 1 % of the largest value for results near zero.
            let floor = 0.01 * want.iter().fold(0f32, |a, v| a.max(v.abs()));
            check(&format!("wide fp8 swiglu m={m} inter={inter} k={k}"), &got, &want, floor, 8e-3);
        }
    }
}
