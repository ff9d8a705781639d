//! Every CUDA elementwise op against a CPU reference on fresh random inputs (GPU machine
//! only: `cargo test -p engine --test cuda_ops -- --ignored`); the GEMMs are in
//! cuda_gemm.rs, the attention ops in cuda_attention.rs.
//!
//! Inputs are bf16-representable, so the reference sees exactly what the kernel sees; what
//! remains is f32 summation order (~1e-6 relative over these lengths) and, where a kernel
//! writes bf16, one output rounding (2^-9 relative). Tolerances say which applies.

mod cuda_common;

use cuda_common::{Rng, check, down, down_bf16, gpu, up, up_bf16};
use engine::model::cpu::ops::rms_norm;
use kernels::bf16;
use kernels::ops;

#[test]
#[ignore = "gpu"]
fn embed_norms_swiglu_argmax_match_cpu() {
    let g = gpu();
    let mut r = Rng(2);
    let (vocab, hd, t) = (1000, 4096, 5);
    let table = r.vec(vocab * hd);
    let ids: Vec<u32> = vec![3, 999, 0, 3, 517];
    let mut x = g.stream().alloc_zeros::<f32>(t * hd).unwrap();
    ops::embed_gather_into(
        &g,
        &up(&g, &ids).as_view(),
        &up_bf16(&g, &table).as_view(),
        hd,
        &mut x.as_view_mut(),
    )
    .unwrap();
    let want: Vec<f32> = ids.iter().flat_map(|&i| table[i as usize * hd..][..hd].to_vec()).collect();
    check("embed_gather (exact)", &down(&g, &x), &want, 1.0, 0.0);

    // The norms on both kernels: the lean float4 ones at Qwen3-8B's width, the scalar rows
    // at widths the lean ones do not take.
    for (width, want) in [(hd, "add_rmsnorm_vec"), (4104, "add_rmsnorm_rows"), (64, "add_rmsnorm_rows")] {
        assert_eq!(ops::add_rmsnorm_kernel(width), want, "the kernel under test");
        norms_match_cpu(&g, &mut r, t, width, &format!("{want} dim {width}"));
    }

    let inter = 12288;
    let gu: Vec<f32> = r.vec(t * 2 * inter).iter().map(|v| v * 4.0).collect();
    let mut act = g.stream().alloc_zeros::<bf16>(t * inter).unwrap();
    ops::swiglu_into(&g, &up(&g, &gu).as_view(), inter, false, &mut act.as_view_mut()).unwrap();
    let want: Vec<f32> = (0..t * inter)
        .map(|i| {
            let (row, c) = (i / inter, i % inter);
            let (gv, uv) = (gu[row * 2 * inter + c], gu[row * 2 * inter + inter + c]);
            gv / (1.0 + (-gv).exp()) * uv
        })
        .collect();
    check("swiglu (bf16)", &down_bf16(&g, &act), &want, 1e-3, 5e-3);
    // The same values read through the interleaved gate|up layout (block j of 16 columns =
    // gate 8j..8j+7, up 8j..8j+7).
    let tiled: Vec<f32> = (0..t)
        .flat_map(|row| {
            let gu_row = &gu[row * 2 * inter..][..2 * inter];
            ops::interleave_gate_up(&gu_row[..inter], &gu_row[inter..], 1)
        })
        .collect();
    ops::swiglu_into(&g, &up(&g, &tiled).as_view(), inter, true, &mut act.as_view_mut()).unwrap();
    check("swiglu tiled (bf16)", &down_bf16(&g, &act), &want, 1e-3, 5e-3);

    let v = 151_936;
    let mut logits = r.vec(3 * v);
    logits[v + 7] = 5.0;
    logits[v + 90_000] = 5.0; // tie: first wins
    logits[2 * v + v - 1] = 9.0;
    let mut am = g.stream().alloc_zeros::<u32>(3).unwrap();
    let mut keys = g.stream().alloc_zeros::<u64>(3 * ops::ARGMAX_PARTS).unwrap();
    ops::argmax_into(&g, &up(&g, &logits).as_view(), v, &mut keys.as_view_mut(), &mut am.as_view_mut())
        .unwrap();
    let want: Vec<u32> = logits.chunks(v).map(engine::sampling::argmax).collect();
    assert_eq!(down(&g, &am), want);
    assert_eq!(want[1..], [7, v as u32 - 1]);
    eprintln!("argmax_rows                              exact (ties -> first)");
}

/// add + RMSNorm and RMSNorm of t rows of hd on `g`'s kernels against the CPU: the residual
/// updated in f32 exactly, the normed output rounded to bf16 once.
fn norms_match_cpu(g: &kernels::Gpu, r: &mut Rng, t: usize, hd: usize, kind: &str) {
    let (xv, addv, w) = (r.vec(t * hd), r.vec(t * hd), r.vec(hd));
    let (mut dx, dadd, dw) = (up(g, &xv), up(g, &addv), up(g, &w));
    let mut out = g.stream().alloc_zeros::<bf16>(t * hd).unwrap();
    ops::add_rmsnorm_into(
        g,
        &mut dx.as_view_mut(),
        &dadd.as_view(),
        &dw.as_view(),
        1e-6,
        &mut out.as_view_mut(),
    )
    .unwrap();
    let mut sum: Vec<f32> = xv.iter().zip(&addv).map(|(a, b)| a + b).collect();
    check(&format!("add_rmsnorm {kind} residual"), &down(g, &dx), &sum, 1e-6, 1e-6);
    rms_norm(&mut sum, &w, 1e-6);
    check(&format!("add_rmsnorm {kind} out (bf16)"), &down_bf16(g, &out), &sum, 1e-3, 5e-3);
    let mut dx2 = up(g, &xv);
    ops::rmsnorm_into(g, &mut dx2.as_view_mut(), &dw.as_view(), 1e-6, &mut out.as_view_mut()).unwrap();
    let mut plain = xv.clone();
    rms_norm(&mut plain, &w, 1e-6);
    check(&format!("rmsnorm {kind} out (bf16)"), &down_bf16(g, &out), &plain, 1e-3, 5e-3);
}

/// The draft's top-k (`ops::topk_logprobs_into`) against the CPU search's `top_k` over an
/// f64 log-softmax, for every per-thread list size (k 1..16) and rows shorter and longer
/// than the block: ids exactly (logits on a 1/64 grid make ties, which go to the lower id;
/// a NaN counts as -inf), log-probabilities within 1e-4.
#[test]
#[ignore = "gpu"]
fn topk_logprobs_matches_the_cpu_top_k() {
    let g = gpu();
    let mut r = Rng(9);
    for (rows, vocab) in [(5usize, 32000usize), (3, 300), (2, 17)] {
        let mut logits: Vec<f32> =
            r.vec(rows * vocab).iter().map(|v| (v * 8.0 * 64.0).round() / 64.0).collect();
        logits[vocab / 2] = f32::NAN;
        if vocab > 100 {
            // A tie at the top of row 1: the lower id comes first.
            let (a, b) = (vocab + 40, vocab + 90);
            logits[a] = 9.0;
            logits[b] = 9.0;
        }
        let dl = up(&g, &logits);
        for k in [1usize, 2, 3, 4, 7, 8, 16].into_iter().filter(|&k| k <= vocab) {
            let (mut ids, mut lp) = (
                g.stream().alloc_zeros::<i32>(rows * k).unwrap(),
                g.stream().alloc_zeros::<f32>(rows * k).unwrap(),
            );
            ops::topk_logprobs_into(
                &g,
                &dl.as_view(),
                vocab,
                k,
                &mut ids.as_view_mut(),
                &mut lp.as_view_mut(),
            )
            .unwrap();
            let (ids, lp) = (down(&g, &ids), down(&g, &lp));
            for row in 0..rows {
                let x = &logits[row * vocab..][..vocab];
                let clean = |v: f32| if v.is_nan() { f64::NEG_INFINITY } else { v as f64 };
                let mx = x.iter().map(|&v| clean(v)).fold(f64::NEG_INFINITY, f64::max);
                let lse = mx + x.iter().map(|&v| (clean(v) - mx).exp()).sum::<f64>().ln();
                let want_lp: Vec<f32> = x.iter().map(|&v| (clean(v) - lse) as f32).collect();
                let want = engine::spec::tree::top_k(&want_lp, k);
                for (j, &(id, p)) in want.iter().enumerate() {
                    let (gi, gp) = (ids[row * k + j], lp[row * k + j]);
                    assert_eq!(gi as usize, id, "rows {rows} vocab {vocab} k {k} row {row} rank {j}: id");
                    assert!(
                        (gp - p).abs() <= 1e-4,
                        "rows {rows} vocab {vocab} k {k} row {row} rank {j}: lp {gp} vs {p}"
                    );
                }
            }
        }
    }
}
