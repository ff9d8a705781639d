//! Greedy sampling on the GPU: the first maximum of each logits row, in two kernels
//! (ARGMAX_PARTS slices per row, then one warp per row) over a caller-provided key buffer.

use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};

/// Slices per row; must match ARGMAX_PARTS in argmax.cu.
pub const ARGMAX_PARTS: usize = 32;

/// out[r] = argmax(logits[r, :]) over rows of `vocab`; ties go to the lowest id. `keys`
/// holds at least rows x ARGMAX_PARTS entries (scratch).
pub fn argmax_into(
    gpu: &Gpu,
    logits: &CudaView<'_, f32>,
    vocab: usize,
    keys: &mut CudaViewMut<'_, u64>,
    out: &mut CudaViewMut<'_, u32>,
) -> Result<()> {
    const OP: &str = "argmax_partial";
    check(vocab > 0 && logits.len() == out.len() * vocab, OP, || {
        format!("logits {} != {} rows x {vocab}", logits.len(), out.len())
    })?;
    check(keys.len() >= out.len() * ARGMAX_PARTS, OP, || {
        format!("keys {} < {} rows x {ARGMAX_PARTS}", keys.len(), out.len())
    })?;
    if out.is_empty() {
        return Ok(());
    }
    let v = to_i32(OP, "vocab", vocab)?;
    let rows = out.len() as u32;
    let mut b = Launch::new(gpu, OP)?;
    b.input(logits).output(&mut *keys).i32(v);
    let cfg = LaunchConfig {
        grid_dim: (rows, ARGMAX_PARTS as u32, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: shapes checked above.
    unsafe { b.launch(cfg) }?;
    const FINAL: &str = "argmax_final";
    let mut b = Launch::new(gpu, FINAL)?;
    b.input(&keys.as_view()).output(out);
    let cfg = LaunchConfig { grid_dim: (rows, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the first kernel wrote rows x ARGMAX_PARTS keys.
    unsafe { b.launch(cfg) }?;
    Ok(())
}
