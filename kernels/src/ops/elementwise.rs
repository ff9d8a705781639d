//! Row-wise ops: embedding gather, (residual add +) RMSNorm, SwiGLU.

use super::to_i32;
use crate::error::{DriverContext, Result, check};
use crate::gpu::Gpu;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig, PushKernelArg};
use half::bf16;

fn rows_cfg(rows: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (rows as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// out[r, :] = table[ids[r], :] as f32. `table` is [vocab, hidden]; ids must be < vocab
/// (the caller validates them: the kernel cannot report a bad id).
pub fn embed_gather_into(
    gpu: &Gpu,
    ids: &CudaView<'_, u32>,
    table: &CudaView<'_, bf16>,
    hidden: usize,
    out: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "embed_gather";
    let rows = ids.len();
    check(hidden > 0 && table.len() % hidden == 0, OP, || {
        format!(
            "table of {} is not a multiple of hidden {hidden}",
            table.len()
        )
    })?;
    check(out.len() == rows * hidden, OP, || {
        format!("out {} != {rows} x {hidden}", out.len())
    })?;
    if rows == 0 {
        return Ok(());
    }
    let h = to_i32(OP, "hidden", hidden)?;
    let mut b = gpu.stream().launch_builder(gpu.func(OP)?);
    b.arg(ids).arg(table).arg(out).arg(&h);
    // SAFETY: shapes checked above; ids are validated by the caller.
    unsafe { b.launch(rows_cfg(rows, 256)) }.ctx(OP)?;
    Ok(())
}

fn norm_checks(op: &'static str, x: usize, w: usize, out: usize) -> Result<usize> {
    check(w > 0 && x.is_multiple_of(w), op, || {
        format!("x of {x} is not rows x dim {w}")
    })?;
    check(out == x, op, || format!("out {out} != x {x}"))?;
    Ok(x / w)
}

/// out = bf16(rmsnorm(x) * w) row by row; x is [rows, dim] f32, w is [dim].
pub fn rmsnorm_into(
    gpu: &Gpu,
    x: &mut CudaViewMut<'_, f32>,
    w: &CudaView<'_, f32>,
    eps: f32,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "rmsnorm_rows";
    let rows = norm_checks(OP, x.len(), w.len(), out.len())?;
    if rows == 0 {
        return Ok(());
    }
    let dim = to_i32(OP, "dim", w.len())?;
    let mut b = gpu.stream().launch_builder(gpu.func(OP)?);
    b.arg(x).arg(w).arg(out).arg(&dim).arg(&eps);
    // SAFETY: shapes checked above.
    unsafe { b.launch(rows_cfg(rows, 256)) }.ctx(OP)?;
    Ok(())
}

/// x += add (the residual), then out = bf16(rmsnorm(x) * w), row by row.
pub fn add_rmsnorm_into(
    gpu: &Gpu,
    x: &mut CudaViewMut<'_, f32>,
    add: &CudaView<'_, f32>,
    w: &CudaView<'_, f32>,
    eps: f32,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "add_rmsnorm_rows";
    let rows = norm_checks(OP, x.len(), w.len(), out.len())?;
    check(add.len() == x.len(), OP, || {
        format!("add {} != x {}", add.len(), x.len())
    })?;
    if rows == 0 {
        return Ok(());
    }
    let dim = to_i32(OP, "dim", w.len())?;
    let mut b = gpu.stream().launch_builder(gpu.func(OP)?);
    b.arg(x).arg(add).arg(w).arg(out).arg(&dim).arg(&eps);
    // SAFETY: shapes checked above.
    unsafe { b.launch(rows_cfg(rows, 256)) }.ctx(OP)?;
    Ok(())
}

/// out[r, c] = bf16(silu(gu[r, c]) * gu[r, inter + c]); gu is [rows, 2 * inter].
pub fn swiglu_into(
    gpu: &Gpu,
    gu: &CudaView<'_, f32>,
    inter: usize,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "swiglu";
    check(inter > 0 && gu.len() % (2 * inter) == 0, OP, || {
        format!("gu of {} is not rows x 2 * {inter}", gu.len())
    })?;
    let total = gu.len() / 2;
    check(out.len() == total, OP, || {
        format!("out {} != {total}", out.len())
    })?;
    if total == 0 {
        return Ok(());
    }
    let (i, t) = (to_i32(OP, "inter", inter)?, to_i32(OP, "total", total)?);
    let mut b = gpu.stream().launch_builder(gpu.func(OP)?);
    b.arg(gu).arg(out).arg(&i).arg(&t);
    // SAFETY: shapes checked above.
    unsafe { b.launch(LaunchConfig::for_num_elems(total as u32)) }.ctx(OP)?;
    Ok(())
}
