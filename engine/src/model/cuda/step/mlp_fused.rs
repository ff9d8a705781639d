//! bf16 decode at one token row with the MLP as one kernel (`Tuning::fused_mlp`,
//! `ops::mlp_fused_bf16_into`): gate|up, SwiGLU and down, whose sums the kernel adds into
//! the residual `x` itself. So a layer that ran it leaves nothing in `o`, and the norm after
//! it (the next layer's input norm, or the final one) reads `x` alone. `forward_layers`
//! (step.rs) asks `applies` once per step.

use super::Scratch;
use crate::error::Result;
use crate::model::cuda::kernel_err;
use crate::model::cuda::weights::{GpuLayer, GpuLinear, GpuWeights};
use kernels::Gpu;
use kernels::ops::{self, MlpFusedWeights};

/// Whether a forward over `rows` tokens runs the fused MLP: asked for, one row, and every
/// layer uploaded for it (bf16 gate|up interleaved, down's chunks: weights.rs).
pub(in crate::model::cuda) fn applies(gpu: &Gpu, w: &GpuWeights, rows: usize) -> bool {
    gpu.tuning().fused_mlp
        && rows == 1
        && w.layers.iter().all(|l| {
            l.gu_tiled && l.down_chunks.is_some() && matches!(l.wgu, GpuLinear::Bf16 { .. })
        })
}

/// The layer's MLP on `sc.h` (its post-attention norm), added into `sc.x`.
pub(super) fn run(
    gpu: &Gpu,
    lw: &GpuLayer,
    (hidden, inter): (usize, usize),
    sc: &mut Scratch,
) -> Result<()> {
    let (GpuLinear::Bf16 { rows, tiled }, Some(chunks)) = (&lw.wgu, &lw.down_chunks) else {
        unreachable!("applies() checked every layer");
    };
    let (gu, layout) = super::decode_bf16(rows, tiled.as_ref());
    let (guv, cv) = (gu.as_view(), chunks.as_view());
    let w = MlpFusedWeights {
        gate_up: &guv,
        layout,
        down_chunks: &cv,
        inter,
        hidden,
    };
    let stages = gpu.tuning().fused_mlp_stages;
    ops::mlp_fused_bf16_into(gpu, &sc.h.as_view(), &w, stages, &mut sc.x.as_view_mut())
        .map_err(kernel_err)
}
