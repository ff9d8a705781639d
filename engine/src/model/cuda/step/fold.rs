//! Decode's inner RMSNorms folded into the skinny GEMMs around them (`Tuning::norm_epilogue`,
//! `ops::NormEpi`): which forwards fold, and the layer's linears with the epilogues that
//! replace the norm kernels. `forward_layers` (step.rs) calls these where it would run
//! `add_rmsnorm` and the plain linears.

use super::{Scratch, decode_bf16, fp8_matrix};
use crate::error::Result;
use crate::model::cuda::kernel_err;
use crate::model::cuda::weights::{GpuLayer, GpuLinear, GpuWeights};
use kernels::Gpu;
use kernels::bf16;
use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, SKINNY_MAX_ROWS};

/// Whether a forward over `rows` tokens folds its inner norms into the GEMMs
/// (`Tuning::norm_epilogue`, `ops::NormEpi`): a decode batch whose every projection runs on
/// the bulk pipeline, with gate|up fused, and a hidden size whose partial sums come in
/// fours (16-byte copies).
pub(in crate::model::cuda) fn folds_norms(
    gpu: &Gpu,
    w: &GpuWeights,
    rows: usize,
    hidden: usize,
) -> bool {
    let t = gpu.tuning();
    let bulk = |l: &GpuLinear| match l {
        GpuLinear::Bf16 { .. } => t.skinny_bulk_bf16,
        GpuLinear::Fp8 { .. } => t.skinny_bulk_fp8,
    };
    t.folds_norms(rows)
        && rows <= SKINNY_MAX_ROWS
        && ops::norm_parts(hidden).is_multiple_of(4)
        && w.layers
            .iter()
            .all(|l| l.gu_tiled && bulk(&l.wqkv) && bulk(&l.wo) && bulk(&l.wgu) && bulk(&l.wdown))
}

/// Run `f` with the skinny GEMM's view of a projection of `n` x `k` (`interleave`: the
/// FP8 gate|up's). half_x.rs takes its FP8 matrices through it too.
pub(super) fn with_skinny_weights<R>(
    w: &GpuLinear,
    (n, k): (usize, usize),
    f: impl FnOnce(ops::SkinnyWeights<'_, '_>) -> R,
) -> R {
    match w {
        GpuLinear::Bf16 { rows, tiled } => {
            let (m, layout) = decode_bf16(rows, tiled.as_ref());
            f(ops::SkinnyWeights::Bf16(&m.as_view(), layout))
        }
        GpuLinear::Fp8 {
            codes,
            scale_inv,
            scale_rows,
            interleave,
            layout,
            ..
        } => {
            let (cv, sv) = (codes.as_view(), scale_inv.as_view());
            let m8 = fp8_matrix(&cv, &sv, (*scale_rows, *interleave, *layout), n, k);
            f(ops::SkinnyWeights::Fp8(&m8))
        }
    }
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
    with_skinny_weights(w, (n, k), |sw| {
        ops::skinny_linear_norm_into(gpu, &x.as_view(), sw, (n, k), &mut y.as_view_mut(), epi)
    })
    .map_err(kernel_err)
}

/// The decode MLP's first half in one kernel over interleaved gate|up weights: act =
/// SwiGLU(x · gate|up), with a folded norm's scale when `epi` says so
/// (`ops::NormEpi::Scale`: x is the producer's hw).
pub(super) fn swiglu_decode(
    gpu: &Gpu,
    lw: &GpuLayer,
    (inter, k): (usize, usize),
    (x, act): (&CudaSlice<bf16>, &mut CudaSlice<bf16>),
    epi: ops::NormEpi<'_, '_>,
) -> Result<()> {
    with_skinny_weights(&lw.wgu, (2 * inter, k), |sw| {
        let (xv, mut av) = (x.as_view(), act.as_view_mut());
        ops::skinny_swiglu_norm_into(gpu, &xv, sw, (inter, k), &mut av, epi)
    })
    .map_err(kernel_err)
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
    let epi = ops::NormEpi::Scale {
        ss: &ss.as_view(),
        eps,
    };
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
    let epi = ops::NormEpi::Scale {
        ss: &ss.as_view(),
        eps,
    };
    swiglu_decode(gpu, lw, (inter, hd), (h, act), epi)?;
    let Scratch {
        x, h, ss, act, o, ..
    } = &mut *sc;
    match w.layers.get(li + 1) {
        Some(next) => {
            let epi = ops::NormEpi::AddNorm {
                w: &next.input_norm.as_view(),
                hw: &mut h.as_view_mut(),
                ss: &mut ss.as_view_mut(),
            };
            linear_folded(gpu, act, &lw.wdown, (hd, inter), x, epi)?;
        }
        None => {
            let epi = ops::NormEpi::None;
            linear_folded(gpu, act, &lw.wdown, (hd, inter), o, epi)?;
        }
    }
    Ok(())
}
