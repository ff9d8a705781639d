//! Per-slot state for speculative decoding (kv_slots.cu): the target's captured hidden
//! states stored by KV slot, and moving accepted tree nodes' rows to their sequential slots.

use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::bf16;

const THREADS: u32 = 256;

/// aux[slots[t], col..col + hidden] = bf16(x[t, ..]) for every row t of x [T, hidden];
/// aux is [slots, width]. Slots must be < aux's rows (the caller built them from block
/// tables it validated).
pub fn aux_store_into(
    gpu: &Gpu,
    x: &CudaView<'_, f32>,
    slots: &CudaView<'_, i32>,
    hidden: usize,
    aux: &mut CudaViewMut<'_, bf16>,
    (width, col): (usize, usize),
) -> Result<()> {
    const OP: &str = "aux_store";
    let t = slots.len();
    check(x.len() == t * hidden, OP, || format!("x {} != {t} slots x hidden {hidden}", x.len()))?;
    check(col + hidden <= width && width > 0 && aux.len().is_multiple_of(width), OP, || {
        format!("columns {col}..{} do not fit rows of {width} in aux of {}", col + hidden, aux.len())
    })?;
    if t == 0 {
        return Ok(());
    }
    let mut b = Launch::new(gpu, OP)?;
    b.input(x).input(slots).output(aux).i32(to_i32(OP, "hidden", hidden)?).i32(to_i32(OP, "width", width)?);
    b.i32(to_i32(OP, "col", col)?);
    let cfg = LaunchConfig { grid_dim: (t as u32, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: shapes checked above; slots index rows of aux (caller's contract).
    unsafe { b.launch(cfg) }?;
    Ok(())
}

/// For each pair (from, to) of `pairs` in order, in each buffer: row `to` = row `from`.
/// `bufs` holds the device addresses of bf16 buffers of rows of `widths[b]` elements (one
/// row per slot); `max_width` is the largest width.
///
/// # Safety
/// Every address in `bufs` must point to a live buffer of at least (max slot in `pairs` + 1)
/// x its width elements, which nothing else uses while the kernel runs.
pub unsafe fn slot_rows_move(
    gpu: &Gpu,
    bufs: &CudaView<'_, u64>,
    widths: &CudaView<'_, i32>,
    max_width: usize,
    pairs: &CudaView<'_, i32>,
) -> Result<()> {
    const OP: &str = "slot_rows_move";
    check(bufs.len() == widths.len(), OP, || format!("{} buffers, {} widths", bufs.len(), widths.len()))?;
    check(pairs.len().is_multiple_of(2), OP, || format!("{} pair ints is odd", pairs.len()))?;
    let n = pairs.len() / 2;
    if n == 0 || bufs.is_empty() || max_width == 0 {
        return Ok(());
    }
    let mut b = Launch::new(gpu, OP)?;
    b.input(bufs).input(widths).input(pairs).i32(to_i32(OP, "pairs", n)?);
    let cfg = LaunchConfig {
        grid_dim: (bufs.len() as u32, max_width.div_ceil(THREADS as usize) as u32, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the caller vouches for the addresses and their extents.
    unsafe { b.launch(cfg) }?;
    Ok(())
}
