//! Skinny GEMM on the tensor cores for decode batches (M <= 8 token rows): bf16 weights, or
//! FP8 e4m3 weights with 128x128 block scales, dequantized in registers. f32 out.

use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::bf16;

/// Most token rows one launch takes (the MMA's n = 8).
pub const SKINNY_MAX_ROWS: usize = 8;
/// Output rows per block (the MMA's m = 16); must match skinny_gemm.cu.
const TILE_N: usize = 16;
/// Threads per block: 8 warps splitting K (SG_WARPS in skinny_gemm.cu).
const THREADS: u32 = 256;
/// FP8 scale blocks (rows x cols), the only layout the kernel reads.
pub const FP8_BLOCK: usize = 128;

fn rows_of(op: &'static str, x_len: usize, k: usize, y_len: usize, n: usize) -> Result<usize> {
    check(x_len % k == 0, op, || {
        format!("x {x_len} is not rows x {k}")
    })?;
    let m = x_len / k;
    check((1..=SKINNY_MAX_ROWS).contains(&m), op, || {
        format!("{m} rows; 1..={SKINNY_MAX_ROWS} supported")
    })?;
    check(y_len == m * n, op, || format!("y {y_len} != {m} x {n}"))?;
    Ok(m)
}

fn cfg(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(TILE_N) as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// y[m, n] = sum_k x[m, k] w[n, k]: x [m, k] bf16 (1 <= m <= 8), w [n, k] bf16 (HF layout),
/// y [m, n] f32; k % 8 == 0 (16-byte loads).
pub fn skinny_gemm_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &CudaView<'_, bf16>,
    n: usize,
    k: usize,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_bf16";
    check(k > 0 && k.is_multiple_of(8), OP, || {
        format!("k = {k} must be a positive multiple of 8")
    })?;
    check(w.len() == n * k, OP, || {
        format!("w {} != {n} x {k}", w.len())
    })?;
    let m = rows_of(OP, x.len(), k, y.len(), n)?;
    let (mi, ni, ki) = (m as i32, to_i32(OP, "n", n)?, to_i32(OP, "k", k)?);
    let mut b = Launch::new(gpu, OP)?;
    b.input(x).input(w).output(y).i32(mi).i32(ni).i32(ki);
    // SAFETY: shapes checked above; k % 8 == 0 keeps every row 16-byte aligned given
    // cudarc's 256-byte-aligned allocations (views at row offsets keep it too).
    unsafe { b.launch(cfg(n)) }?;
    Ok(())
}

/// Where an FP8 matrix's codes and scales live: w [n, k] e4m3fn codes, scale_inv
/// [ceil(n / scale_rows), ceil(k / 128)] f32, real weight = code * scale_inv[n /
/// scale_rows][k / 128]. scale_rows is 128 in the Qwen3-8B-FP8 layout (1: a row each).
pub struct Fp8Matrix<'a, 'b> {
    pub codes: &'a CudaView<'b, u8>,
    pub scale_inv: &'a CudaView<'b, f32>,
    pub scale_rows: usize,
    pub n: usize,
    pub k: usize,
}

impl Fp8Matrix<'_, '_> {
    fn check(&self, op: &'static str, k_mult: usize) -> Result<(i32, i32, i32)> {
        let (n, k, r) = (self.n, self.k, self.scale_rows);
        check(k > 0 && k.is_multiple_of(k_mult), op, || {
            format!("k = {k} must be a positive multiple of {k_mult}")
        })?;
        check(r == 1 || r.is_multiple_of(16), op, || {
            format!("scale_rows {r} must be 1 or a multiple of the 16-row tile")
        })?;
        check(self.codes.len() == n * k, op, || {
            format!("codes {} != {n} x {k}", self.codes.len())
        })?;
        let (sr, sc) = (n.div_ceil(r), k.div_ceil(FP8_BLOCK));
        check(self.scale_inv.len() == sr * sc, op, || {
            format!("scale_inv {} != {sr} x {sc}", self.scale_inv.len())
        })?;
        Ok((
            to_i32(op, "n", n)?,
            to_i32(op, "k", k)?,
            to_i32(op, "scale_rows", r)?,
        ))
    }
}

/// y[m, n] = sum_k x[m, k] w[n, k] with FP8 weights dequantized in registers; k % 16 == 0.
pub fn skinny_gemm_fp8_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &Fp8Matrix<'_, '_>,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "skinny_gemm_fp8";
    let (ni, ki, ri) = w.check(OP, 16)?;
    let m = rows_of(OP, x.len(), w.k, y.len(), w.n)?;
    let mi = m as i32;
    let mut b = Launch::new(gpu, OP)?;
    b.input(x).input(w.codes).input(w.scale_inv).output(y);
    b.i32(mi).i32(ni).i32(ki).i32(ri);
    // SAFETY: shapes checked above; k % 16 == 0 keeps every fp8 row 16-byte aligned.
    unsafe { b.launch(cfg(w.n)) }?;
    Ok(())
}

/// out [n, k] bf16 = the FP8 matrix's values (prefill runs cuBLAS on them); k % 8 == 0.
pub fn fp8_dequant_into(
    gpu: &Gpu,
    w: &Fp8Matrix<'_, '_>,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "fp8_dequant_bf16";
    let (ni, ki, ri) = w.check(OP, 8)?;
    check(out.len() >= w.n * w.k, OP, || {
        format!("out {} < {} x {}", out.len(), w.n, w.k)
    })?;
    let groups = (w.n * w.k / 8) as u32;
    let mut b = Launch::new(gpu, OP)?;
    b.input(w.codes)
        .input(w.scale_inv)
        .output(out)
        .i32(ni)
        .i32(ki)
        .i32(ri);
    let cfg = LaunchConfig {
        grid_dim: (groups.div_ceil(256), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: shapes checked above; k % 8 == 0 keeps every 8-code group aligned.
    unsafe { b.launch(cfg) }?;
    Ok(())
}
