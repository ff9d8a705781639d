//! The linear layers of a step: bf16 or FP8 projections on the skinny GEMM for decode
//! batches (up to 8 rows: it streams the weights once for all rows, where cuBLAS reached
//! ~1.9 TB/s on the small decode shapes), FP8 ones on the wide GEMM at 9-64 rows, and the
//! rest (bf16 past 8 rows, FP8 past 64, prefill) on cuBLAS; lm_head; the MLP's gate|up
//! with SwiGLU.

use super::Scratch;
use super::fold;
use crate::error::Result;
use crate::model::cuda::kernel_err;
use crate::model::cuda::weights::{GpuLayer, GpuLinear, GpuWeights};
use kernels::Gpu;
use kernels::bf16;
use kernels::cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use kernels::ops::{self, SKINNY_MAX_ROWS};

/// y[rows, n] = x[rows, k] w^T: the skinny GEMM up to 8 rows, cuBLAS above when present,
/// else the skinny GEMM in chunks of 8 rows.
pub(in crate::model::cuda) fn linear(
    gpu: &Gpu,
    x: &CudaSlice<bf16>,
    w: &CudaSlice<bf16>,
    n: usize,
    k: usize,
    y: &mut CudaSlice<f32>,
) -> Result<()> {
    linear_bf16(gpu, x, (w, None), n, k, y)
}

/// logits[rows, vocab] = x lm_head^T.
pub(in crate::model::cuda) fn lm_head_into(
    gpu: &Gpu,
    x: &CudaSlice<bf16>,
    w: &GpuWeights,
    (vocab, hd): (usize, usize),
    logits: &mut CudaSlice<f32>,
) -> Result<()> {
    linear(gpu, x, w.lm_head(), vocab, hd, logits)
}

/// `linear` over a row-major matrix and, for the skinny GEMM, its tiled copy if any.
fn linear_bf16(
    gpu: &Gpu,
    x: &CudaSlice<bf16>,
    (rows_w, tiled): (&CudaSlice<bf16>, Option<&CudaSlice<bf16>>),
    n: usize,
    k: usize,
    y: &mut CudaSlice<f32>,
) -> Result<()> {
    let rows = x.len() / k;
    if rows > SKINNY_MAX_ROWS && ops::blas_available(gpu) {
        return ops::gemm_into(gpu, &x.as_view(), &rows_w.as_view(), n, k, &mut y.as_view_mut())
            .map_err(kernel_err);
    }
    let (w, layout) = decode_bf16(rows_w, tiled);
    in_row_chunks(x, y, n, k, |xs, ys| ops::skinny_gemm_into(gpu, xs, &w.as_view(), layout, n, k, ys))
}

/// The matrix the skinny GEMM reads: the tiled copy where there is one.
pub(super) fn decode_bf16<'w>(
    rows: &'w CudaSlice<bf16>,
    tiled: Option<&'w CudaSlice<bf16>>,
) -> (&'w CudaSlice<bf16>, ops::WeightLayout) {
    match tiled {
        Some(t) => (t, ops::WeightLayout::Tiled),
        None => (rows, ops::WeightLayout::Rows),
    }
}

/// Run `f` over x and y in chunks of at most 8 rows (the skinny GEMM's limit).
fn in_row_chunks(
    x: &CudaSlice<bf16>,
    y: &mut CudaSlice<f32>,
    n: usize,
    k: usize,
    mut f: impl FnMut(&CudaView<'_, bf16>, &mut CudaViewMut<'_, f32>) -> kernels::Result<()>,
) -> Result<()> {
    let rows = x.len() / k;
    let mut r = 0;
    while r < rows {
        let m = SKINNY_MAX_ROWS.min(rows - r);
        let xs = x.slice(r * k..(r + m) * k);
        let mut ys = y.slice_mut(r * n..(r + m) * n);
        f(&xs, &mut ys).map_err(kernel_err)?;
        r += m;
    }
    Ok(())
}

/// An FP8 projection's kernel-side description.
pub(super) fn fp8_matrix<'a, 'b>(
    codes: &'a CudaView<'b, u8>,
    scale_inv: &'a CudaView<'b, f32>,
    (scale_rows, interleave): (usize, usize),
    n: usize,
    k: usize,
) -> ops::Fp8Matrix<'a, 'b> {
    ops::Fp8Matrix { codes, scale_inv, scale_rows, n, k, interleave }
}

/// `linear` for a layer projection, bf16 or FP8. FP8 runs the dequantizing skinny GEMM up
/// to 8 rows and the wide one at 9-64 (`ops::wide_fp8_into`, where its shape allows:
/// o_proj's bf16 x, the attention's output); above (larger decode batches, prefill) it runs
/// cuBLAS on the kept bf16 copy, or expands the matrix into `deq` first, which measured
/// faster than 8-row passes over the codes (cuBLASLt FP8 buys nothing at small M, and
/// prefill's M is large enough for bf16 tensor cores: engine/PERF.md).
pub(in crate::model::cuda) fn linear_w(
    gpu: &Gpu,
    x: &CudaSlice<bf16>,
    w: &GpuLinear,
    n: usize,
    k: usize,
    y: &mut CudaSlice<f32>,
    deq: Option<&mut CudaSlice<bf16>>,
) -> Result<()> {
    let (codes, scale_inv, how, prefill) = match w {
        GpuLinear::Bf16 { rows, tiled } => {
            return linear_bf16(gpu, x, (rows, tiled.as_ref()), n, k, y);
        }
        GpuLinear::Fp8 { codes, scale_inv, scale_rows, interleave, prefill, .. } => {
            (codes, scale_inv, (*scale_rows, *interleave), prefill)
        }
    };
    let rows = x.len() / k;
    if fold::has_wide(w, rows, (n, k)) {
        let (xv, mut yv) = (x.as_view(), y.as_view_mut());
        let zeros = ops::WideZeros::default();
        return fold::with_wide_fp8(w, (n, k), |m8| ops::wide_fp8_into(gpu, &xv, m8, &mut yv, zeros));
    }
    let (cv, sv) = (codes.as_view(), scale_inv.as_view());
    let m8 = fp8_matrix(&cv, &sv, how, n, k);
    if rows > SKINNY_MAX_ROWS && ops::blas_available(gpu) {
        // The kept bf16 copy (made by the same dequantization), else a fresh one.
        if let Some(wb) = prefill {
            return linear(gpu, x, wb, n, k, y);
        }
        if let Some(buf) = deq {
            ops::fp8_dequant_into(gpu, &m8, &mut buf.slice_mut(..n * k)).map_err(kernel_err)?;
            let wv = buf.slice(..n * k);
            return ops::gemm_into(gpu, &x.as_view(), &wv, n, k, &mut y.as_view_mut()).map_err(kernel_err);
        }
    }
    in_row_chunks(x, y, n, k, |xs, ys| ops::skinny_gemm_fp8_into(gpu, xs, &m8, ys))
}

/// The MLP's first half: act = SwiGLU(x · gate|up). Decode (up to 8 rows) over interleaved
/// weights runs it as one kernel; otherwise the GEMM writes `gu` and the swiglu kernel
/// reads it (in the weights' layout).
/// Reads `sc.h`, writes `sc.act` (and `sc.gu` on the unfused path).
pub(super) fn gate_up_act(
    gpu: &Gpu,
    lw: &GpuLayer,
    inter: usize,
    k: usize,
    sc: &mut Scratch,
    deq: Option<&mut CudaSlice<bf16>>,
) -> Result<()> {
    let Scratch { h: x, gu, act, .. } = sc;
    gate_up_swiglu(gpu, (&lw.wgu, lw.gu_tiled), (inter, k), x, (gu, act), deq)
}

/// act = SwiGLU(x · gate|up) over `w` (gate|up interleaved by 8 when `interleaved`): one
/// kernel up to 8 rows over interleaved weights, else `linear_w` into `gu` and the swiglu
/// kernel. The target's MLP and the EAGLE-3 draft's.
pub(in crate::model::cuda) fn gate_up_swiglu(
    gpu: &Gpu,
    (w, interleaved): (&GpuLinear, bool),
    (inter, k): (usize, usize),
    x: &CudaSlice<bf16>,
    (gu, act): (&mut CudaSlice<f32>, &mut CudaSlice<bf16>),
    deq: Option<&mut CudaSlice<bf16>>,
) -> Result<()> {
    let rows = x.len() / k;
    if interleaved && rows <= SKINNY_MAX_ROWS {
        return swiglu_decode(gpu, w, (inter, k), (x, act));
    }
    linear_w(gpu, x, w, 2 * inter, k, gu, deq)?;
    ops::swiglu_into(gpu, &gu.as_view(), inter, interleaved, &mut act.as_view_mut()).map_err(kernel_err)
}

/// The decode MLP's first half in one kernel over interleaved gate|up weights: act =
/// SwiGLU(x · gate|up).
fn swiglu_decode(
    gpu: &Gpu,
    w: &GpuLinear,
    (inter, k): (usize, usize),
    (x, act): (&CudaSlice<bf16>, &mut CudaSlice<bf16>),
) -> Result<()> {
    let (xv, mut av) = (x.as_view(), act.as_view_mut());
    match w {
        GpuLinear::Bf16 { rows, tiled } => {
            let (m, layout) = decode_bf16(rows, tiled.as_ref());
            ops::skinny_gemm_swiglu_into(gpu, &xv, &m.as_view(), layout, inter, k, &mut av)
                .map_err(kernel_err)
        }
        GpuLinear::Fp8 { .. } => {
            fold::with_fp8(w, (2 * inter, k), |m8| ops::skinny_gemm_fp8_swiglu_into(gpu, &xv, m8, &mut av))
        }
    }
}
