//! Skinny GEMM y = x w^T for decode batches (M <= 8 rows), bf16 in, f32 out.

use super::to_i32;
use crate::error::{DriverContext, Result, check};
use crate::gpu::Gpu;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use half::bf16;

pub const GEMV_MAX_ROWS: usize = 8;
/// Warps per block.
const WARPS: u32 = 8;

/// Output columns each warp computes for `m` rows (the `C_` of gemv.cu's entries): more
/// columns reuse each x load more; two suffice at m <= 2, where x is only 1-2 loads.
fn cols_per_warp(m: usize) -> u32 {
    if m <= 2 { 2 } else { 4 }
}

/// y[m, n] = sum_k x[m, k] w[n, k]; x is [m, k], w is [n, k] (HF layout), y is [m, n];
/// 1 <= m <= 8 and k % 8 == 0 (16-byte weight loads).
pub fn gemv_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &CudaView<'_, bf16>,
    n: usize,
    k: usize,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "gemv_bf16";
    check(k > 0 && k.is_multiple_of(8), OP, || {
        format!("k = {k} must be a positive multiple of 8")
    })?;
    check(w.len() == n * k, OP, || {
        format!("w {} != {n} x {k}", w.len())
    })?;
    check(x.len() % k == 0, OP, || {
        format!("x {} is not rows x {k}", x.len())
    })?;
    let m = x.len() / k;
    check((1..=GEMV_MAX_ROWS).contains(&m), OP, || {
        format!("{m} rows; 1..=8 supported")
    })?;
    check(y.len() == m * n, OP, || {
        format!("y {} != {m} x {n}", y.len())
    })?;
    let (ni, ki) = (to_i32(OP, "n", n)?, to_i32(OP, "k", k)?);
    let name = format!("gemv_bf16_m{m}");
    let mut b = gpu.stream().launch_builder(gpu.func(&name)?);
    b.arg(x).arg(w).arg(y).arg(&ni).arg(&ki);
    let cfg = LaunchConfig {
        grid_dim: ((n as u32).div_ceil(WARPS * cols_per_warp(m)), 1, 1),
        block_dim: (WARPS * 32, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: shapes checked above; k % 8 == 0 keeps every row 16-byte aligned given
    // cudarc's 256-byte-aligned allocations (views at row offsets keep it too).
    unsafe { b.launch(cfg) }.ctx(name)?;
    Ok(())
}
