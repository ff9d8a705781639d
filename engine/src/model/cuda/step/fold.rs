//! Decode's inner RMSNorms folded into the FP8 skinny GEMMs around them (`ops::NormEpi`):
//! which forwards fold, and the layer's linears with the epilogues that replace the norm
//! kernels. `forward_layers` (step.rs) calls these where it would run `add_rmsnorm` and
//! the plain linears.
//!
//! Only FP8 steps of one row fold. The epilogues cost about what the norm kernels did, and
//! pay only where the GEMMs around them are shortest; bf16 steps and FP8 steps of more
//! rows ran as fast or faster with the norm kernels (engine/PERF-LOG.md steps 52-54).

use super::Scratch;
use super::linear::fp8_matrix;
use crate::error::{EngineError, Result};
use crate::model::cuda::kernel_err;
use crate::model::cuda::weights::{GpuLayer, GpuLinear, GpuWeights};
use kernels::Gpu;
use kernels::bf16;
use kernels::cudarc::driver::CudaSlice;
use kernels::ops;

/// The decode batches that fold their norms: one row.
const FOLD_ROWS: usize = 1;

/// Whether a forward over `rows` tokens folds its inner norms into the GEMMs: a decode
/// batch of `FOLD_ROWS`, every layer projection FP8, gate|up interleaved (fused with
/// SwiGLU), and a hidden size whose partial sums come in fours (16-byte copies).
pub(in crate::model::cuda) fn folds_norms(w: &GpuWeights, rows: usize, hidden: usize) -> bool {
    let fp8 = |l: &GpuLinear| matches!(l, GpuLinear::Fp8 { .. });
    rows <= FOLD_ROWS
        && ops::norm_parts(hidden).is_multiple_of(4)
        && w.layers.iter().all(|l| l.gu_tiled && fp8(&l.wqkv) && fp8(&l.wo) && fp8(&l.wgu) && fp8(&l.wdown))
}

/// Run `f` on an FP8 projection of `n` x `k` as the skinny GEMM takes it (`interleave`: the
/// gate|up's). half_x.rs takes its matrices through it too.
pub(super) fn with_fp8(
    w: &GpuLinear,
    (n, k): (usize, usize),
    f: impl FnOnce(&ops::Fp8Matrix<'_, '_>) -> kernels::Result<()>,
) -> Result<()> {
    match w {
        GpuLinear::Fp8 { codes, scale_inv, scale_rows, interleave, .. } => {
            let (cv, sv) = (codes.as_view(), scale_inv.as_view());
            f(&fp8_matrix(&cv, &sv, (*scale_rows, *interleave), n, k)).map_err(kernel_err)
        }
        // `folds_norms` and `uses_f16_x` admit FP8 layers only.
        GpuLinear::Bf16 { .. } => {
            Err(EngineError::Backend("folded norms and f16 x run FP8 projections only".into()))
        }
    }
}

/// Run `f` on an FP8 projection of `n` x `k` as the wide GEMM takes it (its codes in the
/// wide layout); callers ask only where `has_wide` holds.
pub(super) fn with_wide_fp8(
    w: &GpuLinear,
    (n, k): (usize, usize),
    f: impl FnOnce(&ops::WideFp8<'_, '_>) -> kernels::Result<()>,
) -> Result<()> {
    match w {
        GpuLinear::Fp8 { wide: Some(codes), scale_inv, scale_rows, interleave, .. } => {
            let (cv, sv) = (codes.as_view(), scale_inv.as_view());
            f(&ops::WideFp8(fp8_matrix(&cv, &sv, (*scale_rows, *interleave), n, k))).map_err(kernel_err)
        }
        _ => Err(EngineError::Backend("the wide GEMM runs FP8 projections with a wide copy only".into())),
    }
}

/// Whether the wide GEMM takes `w` [n, k] at `rows` token rows: FP8 with its wide copy and a
/// row count it runs (`ops::wide_fp8_supported`).
pub(in crate::model::cuda) fn has_wide(w: &GpuLinear, rows: usize, (n, k): (usize, usize)) -> bool {
    matches!(w, GpuLinear::Fp8 { wide: Some(_), .. }) && ops::wide_fp8_supported(rows, n, k)
}

/// y = x wᵀ for a decode batch with a folded norm's epilogue (`ops::NormEpi`).
fn linear_folded(
    gpu: &Gpu,
    x: &CudaSlice<bf16>,
    w: &GpuLinear,
    (n, k): (usize, usize),
    y: &mut CudaSlice<f32>,
    epi: ops::NormEpi<'_, '_>,
) -> Result<()> {
    with_fp8(w, (n, k), |m8| ops::skinny_linear_norm_into(gpu, &x.as_view(), m8, &mut y.as_view_mut(), epi))
}

/// qkv as the input norm's consumer: x is the previous down's hw in `sc.h`, the row scales
/// come from its sums in `sc.ss`. `(n, hd)`: qkv's shape.
pub(super) fn qkv(
    gpu: &Gpu,
    lw: &GpuLayer,
    (n, hd): (usize, usize),
    eps: f32,
    sc: &mut Scratch,
) -> Result<()> {
    let Scratch { h, qkv, ss, .. } = sc;
    let epi = ops::NormEpi::Scale { ss: &ss.as_view(), eps };
    linear_folded(gpu, h, &lw.wqkv, (n, hd), qkv, epi)
}

/// Layer `li` after its attention: o_proj joins the residual and stores the post norm's hw
/// and sums; gate|up applies the scale; down joins the residual for the next layer's input
/// norm (the last layer's goes through `o` to the final norm, as unfolded).
pub(super) fn after_attention(
    gpu: &Gpu,
    w: &GpuWeights,
    li: usize,
    (hd, qd, inter): (usize, usize, usize),
    eps: f32,
    sc: &mut Scratch,
) -> Result<()> {
    let lw = &w.layers[li];
    let Scratch { attn, x, h, ss, .. } = &mut *sc;
    let epi = ops::NormEpi::AddNorm {
        w: &lw.post_norm.as_view(),
        hw: &mut h.as_view_mut(),
        ss: &mut ss.as_view_mut(),
    };
    linear_folded(gpu, attn, &lw.wo, (hd, qd), x, epi)?;
    let Scratch { h, act, ss, .. } = &mut *sc;
    let epi = ops::NormEpi::Scale { ss: &ss.as_view(), eps };
    with_fp8(&lw.wgu, (2 * inter, hd), |m8| {
        ops::skinny_swiglu_norm_into(gpu, &h.as_view(), m8, &mut act.as_view_mut(), epi)
    })?;
    let Scratch { x, h, ss, act, o, .. } = &mut *sc;
    match w.layers.get(li + 1) {
        Some(next) => {
            let epi = ops::NormEpi::AddNorm {
                w: &next.input_norm.as_view(),
                hw: &mut h.as_view_mut(),
                ss: &mut ss.as_view_mut(),
            };
            linear_folded(gpu, act, &lw.wdown, (hd, inter), x, epi)
        }
        None => linear_folded(gpu, act, &lw.wdown, (hd, inter), o, ops::NormEpi::None),
    }
}
