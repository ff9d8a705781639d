//! Greedy sampling on the GPU: the first maximum of each logits row.

use super::to_i32;
use crate::error::{DriverContext, Result, check};
use crate::gpu::Gpu;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig, PushKernelArg};

/// out[r] = argmax(logits[r, :]) over rows of `vocab`; ties go to the lowest id.
pub fn argmax_into(
    gpu: &Gpu,
    logits: &CudaView<'_, f32>,
    vocab: usize,
    out: &mut CudaViewMut<'_, u32>,
) -> Result<()> {
    const OP: &str = "argmax_rows";
    check(vocab > 0 && logits.len() == out.len() * vocab, OP, || {
        format!("logits {} != {} rows x {vocab}", logits.len(), out.len())
    })?;
    if out.is_empty() {
        return Ok(());
    }
    let v = to_i32(OP, "vocab", vocab)?;
    let rows = out.len() as u32;
    let mut b = gpu.stream().launch_builder(gpu.func(OP)?);
    b.arg(logits).arg(out).arg(&v);
    let cfg = LaunchConfig {
        grid_dim: (rows, 1, 1),
        block_dim: (1024, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: shapes checked above.
    unsafe { b.launch(cfg) }.ctx(OP)?;
    Ok(())
}
