//! Typed launchers: each checks the shapes of its device buffers, then launches on the
//! `Gpu`'s stream and writes into the caller's output buffer (no allocation, so a step
//! built from them can be captured in a CUDA graph). Inputs are `CudaView`s, outputs
//! `CudaViewMut`s: take them from a `CudaSlice` with `.as_view()` / `.slice(..)`.

mod argmax;
mod attention;
mod blas;
mod decode_attention;
mod eagle3;
mod elementwise;
mod kv_slots;
mod prefill_attention;
mod skinny;
mod skinny_norm;
mod skinny_plan;
mod weight_layout;
mod wide;

pub use argmax::{ARGMAX_PARTS, argmax_into};
pub use attention::{AttnDims, PagedAttnArgs, RopeKvArgs, qk_norm_rope_kv_into};
pub use blas::{blas_available, gemm_into};
pub use decode_attention::{
    MAX_CLUSTER_SPLITS, MAX_SPLITS, SplitScratch, attention_kernel, attention_partials_len, attention_splits,
    decode_attention_into, split_count, uses_cluster,
};
pub use eagle3::{
    Eagle3Norms, GatherRow, MAX_TOPK, eagle3_input_into, rope_kv_into, rows_gather_into, topk_logprobs_into,
};
pub use elementwise::{
    add_rmsnorm_f16_into, add_rmsnorm_into, add_rmsnorm_kernel, embed_gather_into, rmsnorm_f16_into,
    rmsnorm_into, swiglu_into,
};
pub use kv_slots::{aux_store_into, slot_rows_move};
pub use prefill_attention::{
    MAX_TREE_NODES, MAX_TREE_SPLITS, PREFILL_HEAD_DIM, prefill_attention_into, prefill_attention_supported,
    tree_attention_into, tree_attention_splits,
};
pub use skinny::{
    FP8_BLOCK, Fp8Matrix, GATE_UP_GROUP, SKINNY_MAX_ROWS, SkinnyX, fp8_dequant_into, interleave_gate_up,
    skinny_gemm_fp8_into, skinny_gemm_fp8_swiglu_into, skinny_gemm_into, skinny_gemm_swiglu_into,
    skinny_linear_norm_into, skinny_swiglu_norm_into,
};
pub use skinny_norm::{NormEpi, norm_parts};
pub use skinny_plan::{STAGED_X_ROWS, SkinnyForm, skinny_kernel};
pub use weight_layout::{STAGE_ROW_BYTES, WeightLayout, tile_weights, tiled_index};
pub use wide::{
    WIDE_MAX_ROWS, WIDE_TILE_ROWS, WideFp8, WideZeros, wide_fp8_into, wide_fp8_supported,
    wide_fp8_swiglu_into, wide_index, wide_shape, wide_tiles,
};

use crate::error::{KernelError, Result};

/// Sizes go to kernels as `int`: refuse anything that would not fit.
pub(crate) fn to_i32(op: &'static str, what: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| KernelError::Shape { op, msg: format!("{what} = {v} does not fit in i32") })
}
