//! The GEMMs against an f64 reference on fresh random inputs (GPU machine only:
//! `cargo test -p engine --test cuda_gemm -- --ignored`): cuBLAS (prefill) and the
//! tensor-core skinny GEMM (decode), bf16 and FP8, with the FP8 prefill dequantization.
//! Errors are judged relative to sum |x w| (f32 accumulation order), not to the result.

mod cuda_common;

use cuda_common::skinny::{e4m3_value, pipeline, random_e4m3_codes, skinny_gpus};
use cuda_common::{Rng, check, down, down_bf16, gpu, up, up_bf16};
use kernels::cudarc::driver::CudaSlice;
use kernels::ops;
use kernels::{Gpu, bf16};

/// cuBLAS GEMM (decode at 4-8 rows and prefill) against the same f64 reference.
#[test]
#[ignore = "gpu"]
fn cublas_gemm_matches_f64_reference() {
    let g = gpu();
    assert!(ops::blas_available(&g), "libcublas must load on the GPU machine");
    let mut r = Rng(9);
    for (m, n, k) in [(4, 37, 64), (8, 1000, 4096), (232, 300, 4096), (5, 257, 12288)] {
        let (w, x) = (r.vec(n * k), r.vec(m * k));
        let mut y = g.stream().alloc_zeros::<f32>(m * n).unwrap();
        ops::gemm_into(
            &g,
            &up_bf16(&g, &x).as_view(),
            &up_bf16(&g, &w).as_view(),
            n,
            k,
            &mut y.as_view_mut(),
        )
        .unwrap();
        let got = down(&g, &y);
        let err: Vec<f32> = (0..m * n)
            .map(|i| {
                let (t, j) = (i / n, i % n);
                let (xs, ws) = (&x[t * k..][..k], &w[j * k..][..k]);
                let want: f64 = xs.iter().zip(ws).map(|(a, b)| *a as f64 * *b as f64).sum();
                let mag: f32 = xs.iter().zip(ws).map(|(a, b)| (a * b).abs()).sum();
                (got[i] - want as f32) / mag
            })
            .collect();
        check(
            &format!("cublas gemm m={m} n={n} k={k} (err / sum|xw|)"),
            &err,
            &vec![0.0; err.len()],
            1.0,
            1e-5,
        );
    }
}

/// Tensor-core skinny GEMM, bf16 and FP8 block-scaled weights, against f64 for every row
/// count, including shapes whose n is not a multiple of the 16-row tile and k not of the
/// 32/64-k chunk, and FP8 at one row with x staged in shared memory (k up to 12288) and
/// loaded at every stage (k = 16384).
#[test]
#[ignore = "gpu"]
fn skinny_gemm_matches_f64_reference_for_every_row_count() {
    for g in skinny_gpus() {
        skinny_cases(g);
    }
}

fn skinny_cases(g: Gpu) {
    let pipe = pipeline(&g);
    let mut r = Rng(11);
    // 9000 rows: 563 tiles, more than an H200's resident bulk blocks (3 per SM).
    for (n, k) in [(37, 64), (300, 208), (1000, 4096), (256, 12288), (80, 16384), (9000, 64)] {
        let w = r.vec(n * k);
        let dw = up_bf16(&g, &w);
        // FP8: random codes (no NaN: 0x7f / 0xff) and positive block scales.
        let codes = random_e4m3_codes(&mut r, n * k);
        // Scales per 128 rows (the checkpoint layout) and per row (fused tiny projections).
        let sc = k.div_ceil(128);
        let scaled = |rows_per: usize, r: &mut Rng| {
            let s: Vec<f32> = (0..n.div_ceil(rows_per) * sc).map(|_| (r.next().abs() + 0.1) / 64.0).collect();
            let w: Vec<f32> = (0..n * k)
                .map(|i| e4m3_value(codes[i]) * s[(i / k / rows_per) * sc + (i % k) / 128])
                .collect();
            (s, w)
        };
        let (s128, w128) = scaled(128, &mut r);
        let (s1, w1) = scaled(1, &mut r);
        let dcodes = up(&g, &codes);
        // The bf16 matrix tiled too (ops::tile_weights, `Tuning::tiled_weights`).
        let wb: Vec<bf16> = w.iter().map(|&v| bf16::from_f32(v)).collect();
        let dw_tiled = up(&g, &ops::tile_weights(&wb, n, k));
        let (ds128, ds1) = (up(&g, &s128), up(&g, &s1));
        let fp8 = |s: &CudaSlice<f32>, rows: usize| (s.clone(), rows);
        let variants = [
            ("bf16", &w, None),
            ("fp8/128 rows", &w128, Some(fp8(&ds128, 128))),
            ("fp8/1 row", &w1, Some(fp8(&ds1, 1))),
        ];
        // The prefill path's dequantization: exactly code * scale rounded once to bf16.
        for (what, wref, f) in &variants {
            let Some((ds, rows)) = f else { continue };
            let mut out = g.stream().alloc_zeros::<bf16>(n * k).unwrap();
            let m8 = ops::Fp8Matrix {
                codes: &dcodes.as_view(),
                scale_inv: &ds.as_view(),
                scale_rows: *rows,
                n,
                k,
                interleave: 0,
            };
            ops::fp8_dequant_into(&g, &m8, &mut out.as_view_mut()).unwrap();
            let want: Vec<f32> = wref.iter().map(|&v| bf16::from_f32(v).to_f32()).collect();
            check(&format!("fp8_dequant {what} {n}x{k} (exact)"), &down_bf16(&g, &out), &want, 1e-30, 0.0);
        }
        for m in 1..=8 {
            let x = r.vec(m * k);
            let dx = up_bf16(&g, &x);
            for (kind, wref, f) in &variants {
                let mut y = g.stream().alloc_zeros::<f32>(m * n).unwrap();
                match f {
                    None => ops::skinny_gemm_into(
                        &g,
                        &dx.as_view(),
                        &dw.as_view(),
                        ops::WeightLayout::Rows,
                        n,
                        k,
                        &mut y.as_view_mut(),
                    ),
                    Some(_) if k % 16 != 0 => continue,
                    Some((ds, rows)) => ops::skinny_gemm_fp8_into(
                        &g,
                        &dx.as_view(),
                        &ops::Fp8Matrix {
                            codes: &dcodes.as_view(),
                            scale_inv: &ds.as_view(),
                            scale_rows: *rows,
                            n,
                            k,
                            interleave: 0,
                        },
                        &mut y.as_view_mut(),
                    ),
                }
                .unwrap();
                let got = down(&g, &y);
                if f.is_none() {
                    // Tiled weights: only the copies' source addresses change, so the same
                    // bits.
                    let mut yt = g.stream().alloc_zeros::<f32>(m * n).unwrap();
                    let tiled = ops::WeightLayout::Tiled;
                    let (xv, wv) = (dx.as_view(), dw_tiled.as_view());
                    ops::skinny_gemm_into(&g, &xv, &wv, tiled, n, k, &mut yt.as_view_mut()).unwrap();
                    let gt = down(&g, &yt);
                    let same = got.iter().zip(&gt).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(same, "skinny {pipe} {kind} m={m} n={n} k={k}: tiled != row-major");
                }
                let mut err = vec![0f32; m * n];
                for t in 0..m {
                    for j in 0..n {
                        let (xs, ws) = (&x[t * k..][..k], &wref[j * k..][..k]);
                        let want: f64 = xs.iter().zip(ws).map(|(a, b)| *a as f64 * *b as f64).sum();
                        let mag: f64 = xs.iter().zip(ws).map(|(a, b)| (*a as f64 * *b as f64).abs()).sum();
                        err[t * n + j] = ((got[t * n + j] as f64 - want) / mag.max(1e-30)) as f32;
                    }
                }
                check(
                    &format!("skinny {pipe} {kind} m={m} n={n} k={k} (err / sum|xw|)"),
                    &err,
                    &vec![0.0; err.len()],
                    1.0,
                    1e-5,
                );
            }
        }
    }
}

/// SiLU(g) * u in f64, the fused kernels' reference.
fn swiglu_f64(g: f64, u: f64) -> f64 {
    g / (1.0 + (-g).exp()) * u
}

/// gate|up + SwiGLU fused in one kernel over interleaved weights (bf16, and FP8 with
/// 128-row and per-row scales), for every row count: against f64, and against the unfused
/// path (plain skinny GEMM on the same interleaved weights, then the tiled swiglu kernel),
/// which must agree to bf16 rounding since both sum in the same order. Also the FP8 prefill
/// dequantization of interleaved codes, exactly.
#[test]
#[ignore = "gpu"]
fn gate_up_swiglu_fused_matches_reference_and_unfused_path() {
    for g in skinny_gpus() {
        gate_up_cases(g);
    }
}

fn gate_up_cases(g: Gpu) {
    let pipe = pipeline(&g);
    let mut r = Rng(23);
    // (inter, k): aligned FP8 scale blocks, per-row scales (inter % 128 != 0), Qwen3-8B's k;
    // 4600: 575 tiles, more than the persistent grid's blocks; (3072, 1024): a small ring
    // with x staged takes under 48 KiB of dynamic shared memory beside 4 KiB of static
    // arrays, which must opt in (launch.rs: it failed with "invalid argument" when only the
    // dynamic part counted).
    for (inter, k) in [(1024usize, 4096usize), (120, 208), (4600, 64), (3072, 1024)] {
        let n = 2 * inter;
        let sc = k.div_ceil(128);
        let aligned = inter % 128 == 0;
        let scale_rows = if aligned { 128 } else { 1 };
        // Real weights [gate; up] per variant: bf16 values, or FP8 codes times scales kept in
        // gate-then-up order (as the engine uploads them).
        let wb: Vec<f32> = r.vec(n * k);
        let codes = random_e4m3_codes(&mut r, n * k);
        let scales: Vec<f32> =
            (0..n.div_ceil(scale_rows) * sc).map(|_| (r.next().abs() + 0.1) / 64.0).collect();
        let w8: Vec<f32> = (0..n * k)
            .map(|i| e4m3_value(codes[i]) * scales[(i / k / scale_rows) * sc + (i % k) / 128])
            .collect();
        let half = inter * k;
        let il_b: Vec<bf16> =
            ops::interleave_gate_up(&wb[..half], &wb[half..], k).iter().map(|&v| bf16::from_f32(v)).collect();
        let dwb = up(&g, &il_b);
        let il_codes = ops::interleave_gate_up(&codes[..half], &codes[half..], k);
        let dcodes = up(&g, &il_codes);
        // The bf16 tiled copy (ops::tile_weights).
        let dwb_tiled = up(&g, &ops::tile_weights(&il_b, n, k));
        let dscales = up(&g, &scales);
        let (cv, sv) = (dcodes.as_view(), dscales.as_view());
        let m8 = ops::Fp8Matrix { codes: &cv, scale_inv: &sv, scale_rows, n, k, interleave: inter };
        // Prefill dequantization: interleaved rows, each scaled by its original row's scale.
        let mut deq = g.stream().alloc_zeros::<bf16>(n * k).unwrap();
        ops::fp8_dequant_into(&g, &m8, &mut deq.as_view_mut()).unwrap();
        let want_deq: Vec<f32> = ops::interleave_gate_up(&w8[..half], &w8[half..], k)
            .iter()
            .map(|&v| bf16::from_f32(v).to_f32())
            .collect();
        check(
            &format!("fp8_dequant interleaved {n}x{k} (exact)"),
            &down_bf16(&g, &deq),
            &want_deq,
            1e-30,
            0.0,
        );
        for m in 1..=8 {
            let x = r.vec(m * k);
            let dx = up_bf16(&g, &x);
            for (kind, wref) in [("bf16", &wb), ("fp8", &w8)] {
                let mut act = g.stream().alloc_zeros::<bf16>(m * inter).unwrap();
                let mut gu = g.stream().alloc_zeros::<f32>(m * n).unwrap();
                let mut act2 = g.stream().alloc_zeros::<bf16>(m * inter).unwrap();
                let (xv, mut av) = (dx.as_view(), act.as_view_mut());
                if kind == "bf16" {
                    ops::skinny_gemm_swiglu_into(
                        &g,
                        &xv,
                        &dwb.as_view(),
                        ops::WeightLayout::Rows,
                        inter,
                        k,
                        &mut av,
                    )
                    .unwrap();
                    ops::skinny_gemm_into(
                        &g,
                        &xv,
                        &dwb.as_view(),
                        ops::WeightLayout::Rows,
                        n,
                        k,
                        &mut gu.as_view_mut(),
                    )
                    .unwrap();
                } else {
                    ops::skinny_gemm_fp8_swiglu_into(&g, &xv, &m8, &mut av).unwrap();
                    ops::skinny_gemm_fp8_into(&g, &xv, &m8, &mut gu.as_view_mut()).unwrap();
                }
                ops::swiglu_into(&g, &gu.as_view(), inter, true, &mut act2.as_view_mut()).unwrap();
                let got = down_bf16(&g, &act);
                if kind == "bf16" {
                    // Tiled weights: the same bits.
                    let mut act_t = g.stream().alloc_zeros::<bf16>(m * inter).unwrap();
                    let mut avt = act_t.as_view_mut();
                    let (w, tiled) = (dwb_tiled.as_view(), ops::WeightLayout::Tiled);
                    ops::skinny_gemm_swiglu_into(&g, &xv, &w, tiled, inter, k, &mut avt).unwrap();
                    let gt = down_bf16(&g, &act_t);
                    let same = got.iter().zip(&gt).all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(
                        same,
                        "gate_up+swiglu {pipe} {kind} m={m} inter={inter} k={k}: tiled != row-major"
                    );
                }
                let what = format!("gate_up+swiglu {pipe} {kind} m={m} inter={inter} k={k}");
                check(&format!("{what} vs unfused"), &got, &down_bf16(&g, &act2), 1e-6, 8e-3);
                let mut err = vec![0f32; m * inter];
                for t in 0..m {
                    let xs = &x[t * k..][..k];
                    for c in 0..inter {
                        let dot = |row: usize| {
                            let ws = &wref[row * k..][..k];
                            let d: f64 = xs.iter().zip(ws).map(|(a, b)| *a as f64 * *b as f64).sum();
                            let mag: f64 =
                                xs.iter().zip(ws).map(|(a, b)| (*a as f64 * *b as f64).abs()).sum();
                            (d, mag)
                        };
                        let ((gv, gm), (uv, um)) = (dot(c), dot(inter + c));
                        let want = swiglu_f64(gv, uv);
                        // bf16 rounding of the output, plus f32 accumulation of g and u.
                        let tol = 8e-3 * want.abs() + 2e-4 * (uv.abs() * gm + gv.abs() * um);
                        err[t * inter + c] =
                            ((got[t * inter + c] as f64 - want).abs() / tol.max(1e-30)) as f32;
                    }
                }
                check(&format!("{what} (err / tol)"), &err, &vec![0.0; err.len()], 1.0, 1.0);
            }
        }
    }
}
