//! The fused decode MLP (`ops::mlp_fused_bf16_into`: gate|up, SwiGLU and down in one
//! kernel, added into the residual) against an f64 reference on fresh random inputs (GPU
//! machine only: `cargo test -p engine --test cuda_mlp_fused -- --ignored`). The reference
//! rounds act to bf16 as the kernel does (down reads act in bf16 on every path); errors are
//! judged relative to sum |down · act| (f32 sums in the kernel's order).

mod cuda_common;

use cuda_common::{Rng, down, gpu, up, up_bf16};
use kernels::ops::{self, MlpFusedWeights, WeightLayout};
use kernels::{Gpu, bf16};

#[test]
#[ignore = "gpu"]
fn fused_mlp_matches_f64_reference() {
    let g = gpu();
    let mut r = Rng(31);
    // (inter, hidden): Qwen3-8B (four full down stages), Qwen3-0.6B, a hidden size that
    // ends a down stage part way (2056: three stages, the last 8 outputs), odd small
    // shapes (120 x 208: 15 tiles, fewer than the grid could hold), and 575 tiles over
    // hidden 64 (one 1 KB down piece).
    for (inter, hidden) in [
        (12288usize, 4096usize),
        (3072, 1024),
        (1024, 2056),
        (120, 208),
        (4600, 64),
    ] {
        for layout in [WeightLayout::Rows, WeightLayout::Tiled] {
            for stages in [6, 3] {
                case(&g, &mut r, (inter, hidden), layout, stages);
            }
        }
    }
}

/// `stages` is not in `BULK_STAGES_RANGE`, a second row, a hidden size over the kernel's:
/// each refused with an error that names it, before anything runs.
#[test]
#[ignore = "gpu"]
fn fused_mlp_refuses_shapes_it_cannot_run() {
    let g = gpu();
    let (inter, hidden) = (64, 64);
    let gu = up(&g, &vec![bf16::ZERO; 2 * inter * hidden]);
    let dw = up(&g, &vec![bf16::ZERO; inter * hidden]);
    let (guv, dwv) = (gu.as_view(), dw.as_view());
    let w = |hidden| MlpFusedWeights {
        gate_up: &guv,
        layout: WeightLayout::Rows,
        down_chunks: &dwv,
        inter,
        hidden,
    };
    let x = up(&g, &vec![bf16::ZERO; 2 * hidden]);
    let mut y = g.stream().alloc_zeros::<f32>(2 * hidden).unwrap();
    let mut err = |x_rows: usize, stages: u32, h: usize| {
        ops::mlp_fused_bf16_into(
            &g,
            &x.slice(..x_rows * hidden),
            &w(h),
            stages,
            &mut y.slice_mut(..x_rows * hidden),
        )
        .unwrap_err()
        .to_string()
    };
    let e = err(1, 9, hidden);
    assert!(e.contains("9 ring stages"), "{e}");
    let e = err(2, 6, hidden);
    assert!(e.contains("one row"), "{e}");
    let e = err(1, 6, 4104);
    assert!(e.contains("hidden = 4104"), "{e}");
}

fn case(g: &Gpu, r: &mut Rng, (inter, hidden): (usize, usize), layout: WeightLayout, stages: u32) {
    let n = 2 * inter;
    let (wgu, wd, x, y0) = (
        r.vec(n * hidden),
        r.vec(hidden * inter),
        r.vec(hidden),
        r.vec(hidden),
    );
    let half = inter * hidden;
    let il: Vec<bf16> = ops::interleave_gate_up(&wgu[..half], &wgu[half..], hidden)
        .iter()
        .map(|&v| bf16::from_f32(v))
        .collect();
    let il = match layout {
        WeightLayout::Rows => il,
        WeightLayout::Tiled => ops::tile_weights(&il, n, hidden),
    };
    let wd_b: Vec<bf16> = wd.iter().map(|&v| bf16::from_f32(v)).collect();
    let (dgu, ddw) = (
        up(g, &il),
        up(g, &ops::down_column_chunks(&wd_b, hidden, inter)),
    );
    let dx = up_bf16(g, &x);
    let mut dy = up(g, &y0);
    let (guv, dwv) = (dgu.as_view(), ddw.as_view());
    let w = MlpFusedWeights {
        gate_up: &guv,
        layout,
        down_chunks: &dwv,
        inter,
        hidden,
    };
    ops::mlp_fused_bf16_into(g, &dx.as_view(), &w, stages, &mut dy.as_view_mut()).unwrap();
    let got = down(g, &dy);
    // act in f64 from the gate and up rows, rounded to bf16 as the kernel rounds it.
    let dot = |row: &[f32]| -> f64 { row.iter().zip(&x).map(|(a, b)| *a as f64 * *b as f64).sum() };
    let act: Vec<f64> = (0..inter)
        .map(|c| {
            let (gs, us) = (
                dot(&wgu[c * hidden..][..hidden]),
                dot(&wgu[half + c * hidden..][..hidden]),
            );
            bf16::from_f64(gs / (1.0 + (-gs).exp()) * us).to_f64()
        })
        .collect();
    let mut worst = 0f64;
    for o in 0..hidden {
        let row = &wd[o * inter..][..inter];
        let want: f64 = row.iter().zip(&act).map(|(w, a)| *w as f64 * a).sum();
        let mag: f64 = row
            .iter()
            .zip(&act)
            .map(|(w, a)| (*w as f64 * a).abs())
            .sum();
        let e = ((got[o] - y0[o]) as f64 - want).abs() / (mag + 1e-6);
        assert!(
            e < 1e-3,
            "inter {inter} hidden {hidden} {layout:?} stages {stages}: y[{o}] {} + {} vs {want} (err {e:e} of sum|wd act| {mag})",
            y0[o],
            got[o] - y0[o]
        );
        worst = worst.max(e);
    }
    eprintln!(
        "mlp_fused {inter}x{hidden} {layout:?} stages {stages}: max err / sum|wd act| {worst:.3e}"
    );
}
