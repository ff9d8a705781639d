//! Row-wise ops: embedding gather, (residual add +) RMSNorm, SwiGLU.

use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::{bf16, f16};

fn rows_cfg(rows: usize, threads: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
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
        format!("table of {} is not a multiple of hidden {hidden}", table.len())
    })?;
    check(out.len() == rows * hidden, OP, || format!("out {} != {rows} x {hidden}", out.len()))?;
    if rows == 0 {
        return Ok(());
    }
    let h = to_i32(OP, "hidden", hidden)?;
    let mut b = Launch::new(gpu, OP)?;
    b.input(ids).input(table).output(out).i32(h);
    // SAFETY: shapes checked above; ids are validated by the caller.
    unsafe { b.launch(rows_cfg(rows, 256)) }?;
    Ok(())
}

/// Threads per row of the norm kernels, and the most elements each keeps in registers
/// (RN_MAXV in rmsnorm.cu).
const NORM_THREADS: u32 = 256;
const NORM_MAX_DIM: usize = NORM_THREADS as usize * 32;

fn norm_checks(op: &'static str, x: usize, w: usize, out: usize) -> Result<usize> {
    check(w > 0 && x.is_multiple_of(w), op, || format!("x of {x} is not rows x dim {w}"))?;
    check(w <= NORM_MAX_DIM, op, || {
        format!("dim {w} is above the {NORM_MAX_DIM} the kernel holds in registers")
    })?;
    check(out == x, op, || format!("out {out} != x {x}"))?;
    Ok(x / w)
}

/// The lean norm kernels' block: dim / 16 threads when that is a whole number of warps
/// within a block's limit, each holding 16 values in float4s; else None, and rows of `dim`
/// take the scalar kernels. The lean ones take a third of the registers, so their blocks fit
/// beside the GEMM blocks before them (engine/PERF-LOG.md, 2026-11-30 07:15).
fn vec_threads(dim: usize) -> Option<u32> {
    let t = dim / 16;
    (dim.is_multiple_of(16) && t.is_multiple_of(32) && t <= 1024).then_some(t as u32)
}

/// The kernel `add_rmsnorm_into` runs for rows of `dim` (tests check which kernel a width
/// reaches).
pub fn add_rmsnorm_kernel(dim: usize) -> &'static str {
    NORM_KERNELS[1][vec_threads(dim).is_some() as usize]
}

/// [plain, with the residual add][scalar rows, lean float4].
const NORM_KERNELS: [[&str; 2]; 2] =
    [["rmsnorm_rows", "rmsnorm_vec"], ["add_rmsnorm_rows", "add_rmsnorm_vec"]];

/// The lean norms with f16 out (`rmsnorm_f16_into`); they have no scalar form.
const NORM_F16_KERNELS: [&str; 2] = ["rmsnorm_vec_f16", "add_rmsnorm_vec_f16"];

/// x += add (the residual, when given), then out = bf16(rmsnorm(x) * w), row by row: x is
/// [rows, dim] f32, w is [dim]. The scalar kernel, or the lean one (`vec_threads`); no
/// scalar kernel (the f16 forms): the lean one or an error.
fn norm_into<O>(
    gpu: &Gpu,
    (scalar, lean): (Option<&'static str>, &'static str),
    x: &mut CudaViewMut<'_, f32>,
    add: Option<&CudaView<'_, f32>>,
    w: &CudaView<'_, f32>,
    eps: f32,
    out: &mut CudaViewMut<'_, O>,
) -> Result<()> {
    let rows = norm_checks(scalar.unwrap_or(lean), x.len(), w.len(), out.len())?;
    let vec = vec_threads(w.len());
    check(scalar.is_some() || vec.is_some(), lean, || {
        format!("dim {} needs the lean kernel (dim / 16 a multiple of 32 up to 1024)", w.len())
    })?;
    let name = match (vec, scalar) {
        (None, Some(s)) => s,
        _ => lean,
    };
    if let Some(add) = add {
        check(add.len() == x.len(), name, || format!("add {} != x {}", add.len(), x.len()))?;
    }
    if rows == 0 {
        return Ok(());
    }
    let dim = to_i32(name, "dim", w.len())?;
    let mut b = Launch::new(gpu, name)?;
    if vec.is_some() {
        b.output_aligned16(x)?;
        if let Some(add) = add {
            b.input_aligned16(add, "add")?;
        }
        b.input_aligned16(w, "norm weight")?;
    } else {
        b.output(x);
        if let Some(add) = add {
            b.input(add);
        }
        b.input(w);
    }
    b.output(out).i32(dim).f32(eps);
    // SAFETY: shapes checked above; the lean kernels' float4 reads and 8-byte writes are
    // aligned (starts checked, rows are dim % 16 == 0 elements long).
    unsafe { b.launch(rows_cfg(rows, vec.unwrap_or(NORM_THREADS))) }?;
    Ok(())
}

/// out = bf16(rmsnorm(x) * w) row by row; x is [rows, dim] f32, w is [dim].
pub fn rmsnorm_into(
    gpu: &Gpu,
    x: &mut CudaViewMut<'_, f32>,
    w: &CudaView<'_, f32>,
    eps: f32,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    let [s, v] = NORM_KERNELS[0];
    norm_into(gpu, (Some(s), v), x, None, w, eps, out)
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
    let [s, v] = NORM_KERNELS[1];
    norm_into(gpu, (Some(s), v), x, Some(add), w, eps, out)
}

/// `rmsnorm_into` with f16 out, for the FP8 GEMMs that read x as f16 (`ops::SkinnyX`, the
/// `_xh` kernels): each value is the bf16 one taken to f16 as those GEMMs
/// take bf16 x (saturating at +-65504), so they multiply the same bits. Lean kernels only.
pub fn rmsnorm_f16_into(
    gpu: &Gpu,
    x: &mut CudaViewMut<'_, f32>,
    w: &CudaView<'_, f32>,
    eps: f32,
    out: &mut CudaViewMut<'_, f16>,
) -> Result<()> {
    norm_into(gpu, (None, NORM_F16_KERNELS[0]), x, None, w, eps, out)
}

/// `add_rmsnorm_into` with f16 out (`rmsnorm_f16_into`).
pub fn add_rmsnorm_f16_into(
    gpu: &Gpu,
    x: &mut CudaViewMut<'_, f32>,
    add: &CudaView<'_, f32>,
    w: &CudaView<'_, f32>,
    eps: f32,
    out: &mut CudaViewMut<'_, f16>,
) -> Result<()> {
    norm_into(gpu, (None, NORM_F16_KERNELS[1]), x, Some(add), w, eps, out)
}

/// out[r, c] = bf16(silu(gate) * up) over gu [rows, 2 * inter]: gate column c and up
/// column inter + c, or with `tiled` the `interleave_gate_up` layout (column block j of 16 =
/// gate 8j..8j+7, up 8j..8j+7).
pub fn swiglu_into(
    gpu: &Gpu,
    gu: &CudaView<'_, f32>,
    inter: usize,
    tiled: bool,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "swiglu";
    check(inter > 0 && gu.len() % (2 * inter) == 0, OP, || {
        format!("gu of {} is not rows x 2 * {inter}", gu.len())
    })?;
    check(!tiled || inter.is_multiple_of(super::GATE_UP_GROUP), OP, || {
        format!("tiled gate|up needs inter % {} == 0, got {inter}", super::GATE_UP_GROUP)
    })?;
    let total = gu.len() / 2;
    check(out.len() == total, OP, || format!("out {} != {total}", out.len()))?;
    if total == 0 {
        return Ok(());
    }
    let (i, t) = (to_i32(OP, "inter", inter)?, to_i32(OP, "total", total)?);
    let mut b = Launch::new(gpu, OP)?;
    b.input(gu).output(out).i32(i).i32(t).i32(tiled as i32);
    // SAFETY: shapes checked above.
    unsafe { b.launch(LaunchConfig::for_num_elems(total as u32)) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{add_rmsnorm_kernel, vec_threads};

    #[test]
    fn lean_norm_takes_rows_of_whole_warps() {
        assert_eq!(vec_threads(4096), Some(256));
        assert_eq!(vec_threads(1024), Some(64));
        assert_eq!(vec_threads(16384), Some(1024));
        assert_eq!(vec_threads(64), None, "4 threads: not a warp");
        assert_eq!(vec_threads(4104), None, "not a multiple of 16");
        assert_eq!(vec_threads(32768), None, "2048 threads");
        assert_eq!(add_rmsnorm_kernel(4096), "add_rmsnorm_vec");
        assert_eq!(add_rmsnorm_kernel(64), "add_rmsnorm_rows");
    }
}
