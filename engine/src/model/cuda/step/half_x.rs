//! FP8 decode with x as f16 (`ops::SkinnyX`), for the batches whose norms do not fold
//! (2-64 rows): the norms before qkv and gate|up write f16 (`ops::rmsnorm_f16_into`),
//! gate|up's SwiGLU writes its act in f16, and the FP8 GEMMs read them as they are, so no
//! block converts bf16 x at every ring stage (engine/PERF-LOG.md step 53). Same bits as
//! bf16 x. Up to 8 rows the GEMMs are the skinny kernels, at 9-64 the wide ones
//! (`ops::wide_fp8_into`: 64-row tiles read from the codes' wide copy, x staged once per
//! stage, K split by atomics into a y the GEMM before cleared,
//! so their sums' bits may vary from run to run; gate|up's SwiGLU fused, never split).
//! o_proj keeps its bf16 x (the attention's output); the final norm stays bf16 for lm_head.
//! `forward_layers` (step.rs) calls these where it would run the norms and those linears.

use super::Scratch;
use super::fold::{has_wide, with_fp8, with_wide_fp8};
use crate::error::Result;
use crate::model::cuda::kernel_err;
use crate::model::cuda::weights::{GpuLayer, GpuLinear, GpuWeights};
use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, SKINNY_MAX_ROWS, WIDE_MAX_ROWS};
use kernels::{Gpu, f16};

/// Whether a forward over `rows` tokens runs its FP8 GEMMs on f16 x: a decode batch
/// whose norms do not fold (`folds`), a hidden size the lean norm kernels take (the f16
/// norms have no scalar form), every layer's qkv, gate|up (fused with SwiGLU) and down
/// FP8, and past 8 rows shapes the wide kernels take (`ops::wide_fp8_supported`).
pub(in crate::model::cuda) fn uses_f16_x(w: &GpuWeights, rows: usize, hidden: usize, folds: bool) -> bool {
    let fp8_shape = |l: &GpuLinear| match l {
        GpuLinear::Fp8 { codes, .. } => {
            rows <= SKINNY_MAX_ROWS || has_wide(l, rows, (codes.len() / hidden, hidden))
        }
        GpuLinear::Bf16 { .. } => false,
    };
    let down = |l: &GpuLinear| match l {
        GpuLinear::Fp8 { codes, .. } => {
            rows <= SKINNY_MAX_ROWS || has_wide(l, rows, (hidden, codes.len() / hidden))
        }
        GpuLinear::Bf16 { .. } => false,
    };
    !folds
        && rows <= WIDE_MAX_ROWS
        && ops::add_rmsnorm_kernel(hidden) == "add_rmsnorm_vec"
        && w.layers.iter().all(|l| l.gu_tiled && fp8_shape(&l.wqkv) && fp8_shape(&l.wgu) && down(&l.wdown))
}

/// The norm into `sc.h16`: layer 0's input norm (`add` false), or the residual add of
/// `sc.o` fused with it.
pub(super) fn norm(gpu: &Gpu, sc: &mut Scratch, add: bool, weight: &CudaSlice<f32>, eps: f32) -> Result<()> {
    let Scratch { x, o, h16, .. } = sc;
    let (mut xv, wv, mut hv) = (x.as_view_mut(), weight.as_view(), h16.as_view_mut());
    if add {
        ops::add_rmsnorm_f16_into(gpu, &mut xv, &o.as_view(), &wv, eps, &mut hv)
    } else {
        ops::rmsnorm_f16_into(gpu, &mut xv, &wv, eps, &mut hv)
    }
    .map_err(kernel_err)
}

/// y = x wᵀ for an FP8 projection over f16 x [rows <= 64, k]; past 8 rows the wide GEMM
/// with `zeros` (the chain below).
fn linear(
    gpu: &Gpu,
    x: &CudaSlice<f16>,
    w: &GpuLinear,
    (n, k): (usize, usize),
    y: &mut CudaSlice<f32>,
    zeros: ops::WideZeros<'_, '_>,
) -> Result<()> {
    let (xv, mut yv) = (x.as_view(), y.as_view_mut());
    match x.len() / k {
        rows if rows <= SKINNY_MAX_ROWS => {
            with_fp8(w, (n, k), |m8| ops::skinny_gemm_fp8_into(gpu, &xv, m8, &mut yv))
        }
        _ => with_wide_fp8(w, (n, k), |m8| ops::wide_fp8_into(gpu, &xv, m8, &mut yv, zeros)),
    }
}

// Past 8 rows the layer's split wide GEMMs find their y zeroed by the wide GEMM before them
// (ops::WideZeros; a memset each cost ~1.1 us that PDL could not hide, engine/PERF-LOG.md
// step 73): qkv clears `o` for o_proj (its last reader, the input norm, has run), gate|up
// clears `o` again for down (the post norm has read o_proj's sums), and down clears `qkv`
// for the next layer's qkv (read by this layer's RoPE kernel). Layer 0's qkv memsets.

/// qkv from `sc.h16` (the input norm's f16) into `sc.qkv` (zeroed by the previous layer's
/// down unless `li` is 0), clearing `sc.o` for o_proj. `(n, hd)`: qkv's shape.
pub(super) fn qkv(
    gpu: &Gpu,
    li: usize,
    lw: &GpuLayer,
    (n, hd): (usize, usize),
    sc: &mut Scratch,
) -> Result<()> {
    let Scratch { h16, qkv, o, .. } = sc;
    let zeros = ops::WideZeros { y_zeroed: li > 0, clear: Some(&mut o.as_view_mut()) };
    linear(gpu, h16, &lw.wqkv, (n, hd), qkv, zeros)
}

/// o_proj over the attention's bf16 output into `sc.o`: past 8 rows the wide GEMM, whose y
/// qkv cleared, where the matrix has a wide copy; else `linear_w`.
pub(super) fn o_proj(
    gpu: &Gpu,
    lw: &GpuLayer,
    (hd, qd): (usize, usize),
    sc: &mut Scratch,
    deq: Option<&mut CudaSlice<kernels::bf16>>,
) -> Result<()> {
    let rows = sc.attn.len() / qd;
    if rows <= SKINNY_MAX_ROWS || !has_wide(&lw.wo, rows, (hd, qd)) {
        return super::linear::linear_w(gpu, &sc.attn, &lw.wo, hd, qd, &mut sc.o, deq);
    }
    let (xv, mut yv) = (sc.attn.as_view(), sc.o.as_view_mut());
    let zeros = ops::WideZeros { y_zeroed: true, clear: None };
    with_wide_fp8(&lw.wo, (hd, qd), |m8| ops::wide_fp8_into(gpu, &xv, m8, &mut yv, zeros))
}

/// The MLP after o_proj (its sums in `sc.o`): the residual add fused with the post norm
/// into `sc.h16`, gate|up with SwiGLU into `sc.act16`, down into `sc.o`.
pub(super) fn mlp(
    gpu: &Gpu,
    lw: &GpuLayer,
    (hd, inter): (usize, usize),
    eps: f32,
    sc: &mut Scratch,
) -> Result<()> {
    norm(gpu, sc, true, &lw.post_norm, eps)?;
    let Scratch { h16, act16, o, qkv, .. } = sc;
    let (xv, mut av) = (h16.as_view(), act16.as_view_mut());
    match h16.len() / hd {
        rows if rows <= SKINNY_MAX_ROWS => {
            with_fp8(&lw.wgu, (2 * inter, hd), |m8| ops::skinny_gemm_fp8_swiglu_into(gpu, &xv, m8, &mut av))
        }
        _ => with_wide_fp8(&lw.wgu, (2 * inter, hd), |m8| {
            ops::wide_fp8_swiglu_into(gpu, &xv, m8, &mut av, Some(&mut o.as_view_mut()))
        }),
    }?;
    let zeros = ops::WideZeros { y_zeroed: true, clear: Some(&mut qkv.as_view_mut()) };
    linear(gpu, act16, &lw.wdown, (hd, inter), o, zeros)
}
