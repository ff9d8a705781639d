//! The wide FP8 GEMM (9-64 token rows, kernels/cuda/wide_fp8.cu) against an f64 reference on
//! fresh random inputs (GPU machine only: `cargo test -p engine --test cuda_wide_gemm --
//! --ignored`): every entry (f16 x, bf16 x, gate|up with SwiGLU over interleaved rows) at
//! rows of all four forms (9-16, 17-32, 33-48 and 49-64, some filling only part of a token
//! group; the 48- and 64-row forms' 128-row blocks refuse an n they do not divide), on
//! Qwen3-8B's four projection shapes and on small ones: 128-row and per-row scales, K split
//! 96 ways, a grid past the SMs' resident blocks (no split), and row counts that are a
//! multiple of the 64-row tile but not of the 128-row scale block. The kernels read the
//! codes' wide copy (`ops::wide_tiles`), so these also check that layout against the
//! kernels' reads. Errors are judged relative
//! to sum |x w|: split blocks add into y in whatever order they finish, so the f32 sums'
//! bits may differ between runs, and nothing here compares bits. y starts as NaN, so an op
//! that left y unzeroed before adding into it fails; so does a chained one (`WideZeros`)
//! whose first GEMM did not clear the second's y.

mod cuda_common;

use cuda_common::skinny::{e4m3_value, random_e4m3_codes};
use cuda_common::{Rng, check, down, gpu, up};
use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, Fp8Matrix, WideFp8};
use kernels::{Gpu, bf16, f16};
use rayon::prelude::*;

/// Token rows of each case: the 16-row form (9-16), the 32-row one (17-32), the 48-row one
/// (33-48) and the 64-row one (49-64).
const ROWS: [usize; 14] = [9, 12, 16, 17, 24, 31, 32, 33, 40, 41, 48, 49, 56, 64];
const MOST_ROWS: usize = 64;

/// Real weights of an [n, k] FP8 matrix whose scales cover `rows_per` rows each.
fn dequant(codes: &[u8], scales: &[f32], (n, k): (usize, usize), rows_per: usize) -> Vec<f32> {
    let sc = k.div_ceil(128);
    (0..n * k).map(|i| e4m3_value(codes[i]) * scales[(i / k / rows_per) * sc + (i % k) / 128]).collect()
}

/// x w^T and |x| |w|^T in f64 for x [rows, k], w [n, k]: [n][rows] each (weight rows in
/// parallel; Qwen3-8B's gate|up at 32 rows is 3.2 G products).
fn reference(x: &[f32], w: &[f32], (rows, n, k): (usize, usize, usize)) -> (Vec<f64>, Vec<f64>) {
    let out: Vec<(f64, f64)> = (0..n)
        .into_par_iter()
        .flat_map_iter(|j| {
            let ws = &w[j * k..][..k];
            (0..rows).map(move |t| {
                x[t * k..][..k].iter().zip(ws).fold((0f64, 0f64), |(s, a), (p, q)| {
                    let v = *p as f64 * *q as f64;
                    (s + v, a + v.abs())
                })
            })
        })
        .collect();
    out.into_iter().unzip()
}

/// `rows` x [rows, k] exact in bf16 and in f16 (bf16 values, those under f16's normal range
/// flushed to zero), so f16 x and bf16 x are the same numbers and share one reference.
fn shared_x(r: &mut Rng, rows: usize, k: usize) -> Vec<f32> {
    r.vec(rows * k).into_iter().map(|v| if v.abs() < 2f32.powi(-14) { 0.0 } else { v }).collect()
}

/// y [m, n] from the GPU against the reference's first m rows: (y - x w) / sum |x w|.
fn rel_errors(got: &[f32], (want, mag): (&[f64], &[f64]), (m, n): (usize, usize)) -> Vec<f32> {
    (0..m * n)
        .map(|i| {
            let (t, j) = (i / n, i % n);
            ((got[i] as f64 - want[j * MOST_ROWS + t]) / mag[j * MOST_ROWS + t].max(1e-30)) as f32
        })
        .collect()
}

/// A y of m x n NaNs.
fn nan_y(g: &Gpu, len: usize) -> CudaSlice<f32> {
    up(g, &vec![f32::NAN; len])
}

/// `wide_fp8_into` on an [n, k] matrix with `rows_per`-row scales, f16 and bf16 x, at every
/// row count of ROWS; `swiglu`: also the SwiGLU op on the same weights read as gate rows
/// then up rows (n = 2 x inter), uploaded interleaved by 8 as the engine does.
fn case(g: &Gpu, r: &mut Rng, (n, k): (usize, usize), rows_per: usize, swiglu: bool) {
    let codes = random_e4m3_codes(r, n * k);
    let sc = k.div_ceil(128);
    let scales: Vec<f32> = (0..n.div_ceil(rows_per) * sc).map(|_| (r.next().abs() + 0.1) / 64.0).collect();
    let w = dequant(&codes, &scales, (n, k), rows_per);
    let x = shared_x(r, MOST_ROWS, k);
    let (want, mag) = reference(&x, &w, (MOST_ROWS, n, k));
    drop(w);
    let (dcodes, ds) = (up(g, &ops::wide_tiles(&codes, n, k)), up(g, &scales));
    let (cv, sv) = (dcodes.as_view(), ds.as_view());
    let m8 = WideFp8(Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows: rows_per, n, k, interleave: 0 });
    let xh: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
    let xb: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
    for m in ROWS {
        let none = ops::WideZeros::default;
        if !ops::wide_fp8_supported(m, n, k) {
            refused(g, (&xh[..m * k], &m8), m * n);
            continue;
        }
        let mut y = nan_y(g, m * n);
        ops::wide_fp8_into(g, &up(g, &xh[..m * k]).as_view(), &m8, &mut y.as_view_mut(), none()).unwrap();
        let what = format!("wide fp8 f16 x, scales/{rows_per} rows m={m} n={n} k={k} (err / sum|xw|)");
        check(&what, &rel_errors(&down(g, &y), (&want, &mag), (m, n)), &vec![0.0; m * n], 1.0, 1e-5);
        // bf16 x (o_proj's), taken to f16 by the kernel; y holds the f16 run's sums now.
        ops::wide_fp8_into(g, &up(g, &xb[..m * k]).as_view(), &m8, &mut y.as_view_mut(), none()).unwrap();
        let what = format!("wide fp8 bf16 x, scales/{rows_per} rows m={m} n={n} k={k} (err / sum|xw|)");
        check(&what, &rel_errors(&down(g, &y), (&want, &mag), (m, n)), &vec![0.0; m * n], 1.0, 1e-5);
        // As a step chains them: a first run clears the y of a second (NaN until then), which
        // then adds into it with no memset.
        let mut y2 = nan_y(g, m * n);
        let first = ops::WideZeros { y_zeroed: false, clear: Some(&mut y2.as_view_mut()) };
        ops::wide_fp8_into(g, &up(g, &xh[..m * k]).as_view(), &m8, &mut y.as_view_mut(), first).unwrap();
        let then = ops::WideZeros { y_zeroed: true, clear: None };
        ops::wide_fp8_into(g, &up(g, &xh[..m * k]).as_view(), &m8, &mut y2.as_view_mut(), then).unwrap();
        let what = format!("wide fp8 into a y an earlier one cleared, m={m} n={n} k={k} (err / sum|xw|)");
        check(&what, &rel_errors(&down(g, &y2), (&want, &mag), (m, n)), &vec![0.0; m * n], 1.0, 1e-5);
    }
    if !swiglu {
        return;
    }
    let inter = n / 2;
    let half = inter * k;
    let dil = up(g, &ops::wide_tiles(&ops::interleave_gate_up(&codes[..half], &codes[half..], k), n, k));
    let ilv = dil.as_view();
    let m8 =
        WideFp8(Fp8Matrix { codes: &ilv, scale_inv: &sv, scale_rows: rows_per, n, k, interleave: inter });
    for m in ROWS.into_iter().filter(|&m| ops::wide_fp8_supported(m, n, k)) {
        let mut act = g.stream().alloc_zeros::<f16>(m * inter).unwrap();
        // It clears a buffer as the step's gate|up clears down's y.
        let mut cleared = nan_y(g, m * 4 * k);
        let clear = Some(&mut cleared.as_view_mut());
        ops::wide_fp8_swiglu_into(g, &up(g, &xh[..m * k]).as_view(), &m8, &mut act.as_view_mut(), clear)
            .unwrap();
        assert!(down(g, &cleared).iter().all(|&v| v == 0.0), "m={m}: the buffer to clear is not all zeros");
        let got: Vec<f32> = down(g, &act).iter().map(|v| v.to_f32()).collect();
        let dot = |t: usize, j: usize| want[j * MOST_ROWS + t];
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

/// An n the form's blocks do not divide (past 32 rows, 128-row blocks): refused, naming it.
fn refused(g: &Gpu, (x, m8): (&[f16], &WideFp8<'_, '_>), y_len: usize) {
    let mut y = nan_y(g, y_len);
    let e = ops::wide_fp8_into(g, &up(g, x).as_view(), m8, &mut y.as_view_mut(), Default::default());
    let e = e.unwrap_err().to_string();
    assert!(e.contains("multiple of 128"), "n = {}, {} rows: {e}", m8.0.n, x.len() / m8.0.k);
}

/// SiLU(g) * u in f64.
fn swiglu_f64(g: f64, u: f64) -> f64 {
    g / (1.0 + (-g).exp()) * u
}

/// Qwen3-8B's projections at 128x128 block scales: qkv (96 tiles, 5 splits on an H200 at
/// 16 rows), o_proj (64 tiles, 8 splits), gate|up (384 tiles: 1 split; with SwiGLU, none)
/// and down (64 tiles of 96 stages, 8 splits).
#[test]
#[ignore = "gpu"]
fn wide_fp8_matches_f64_reference_on_qwen3_8b_shapes() {
    let g = gpu();
    let mut r = Rng(41);
    for ((n, k), swiglu) in
        [((6144, 4096), false), ((4096, 4096), false), ((24576, 4096), true), ((4096, 12288), false)]
    {
        case(&g, &mut r, (n, k), 128, swiglu);
    }
}

/// Small shapes at 128-row and per-row scales (split counts on an H200's 528 resident
/// blocks at 16 rows): 2 stages (2 blocks per tile); 4 tiles of 96 stages (96 blocks per
/// tile, one stage each, adding into y); 16 tiles of 32 stages (32); 544 tiles (no split:
/// stores, no zeroing); 3 and 5 tiles, whose last 64 rows share a scale block with rows of
/// no tile (refused past 32 rows); and gate|up with SwiGLU at three sizes (one of 64 rows
/// per half: one 128-row block past 32 rows).
#[test]
#[ignore = "gpu"]
fn wide_fp8_matches_f64_reference_on_small_shapes() {
    let g = gpu();
    let mut r = Rng(31);
    for rows_per in [128usize, 1] {
        for (n, k) in
            [(256usize, 256usize), (256, 12288), (1024, 4096), (34816, 256), (192, 256), (320, 4096)]
        {
            case(&g, &mut r, (n, k), rows_per, false);
        }
    }
    for (n, k) in [(1024usize, 1024usize), (3072, 4096), (128, 512)] {
        case(&g, &mut r, (n, k), 128, true);
    }
}

/// Refused shapes and row counts name the problem.
#[test]
#[ignore = "gpu"]
fn wide_fp8_refuses_what_it_cannot_do() {
    let g = gpu();
    let s = up(&g, &[1f32; 2 * 2]);
    let sv = s.as_view();
    let codes = up(&g, &vec![0u8; 200 * 256]);
    let cv = codes.as_view();
    let bad =
        WideFp8(Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows: 128, n: 200, k: 256, interleave: 0 });
    let x = up(&g, &vec![f16::ZERO; 16 * 256]);
    let mut y = g.stream().alloc_zeros::<f32>(16 * 200).unwrap();
    let none = ops::WideZeros::default;
    let e = ops::wide_fp8_into(&g, &x.as_view(), &bad, &mut y.as_view_mut(), none()).unwrap_err().to_string();
    assert!(e.contains("n = 200 must be a multiple of 64"), "{e}");
    let codes = up(&g, &vec![0u8; 256 * 256]);
    let cv = codes.as_view();
    let ok =
        WideFp8(Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows: 128, n: 256, k: 256, interleave: 0 });
    for rows in [8usize, 65] {
        let x = up(&g, &vec![f16::ZERO; rows * 256]);
        let mut y = g.stream().alloc_zeros::<f32>(rows * 256).unwrap();
        let e =
            ops::wide_fp8_into(&g, &x.as_view(), &ok, &mut y.as_view_mut(), none()).unwrap_err().to_string();
        assert!(e.contains("9..=64 supported"), "{rows} rows: {e}");
    }
}
