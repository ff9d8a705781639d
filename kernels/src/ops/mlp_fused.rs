//! Decode's MLP at one token row as one kernel (mlp_fused.cu): gate|up, SwiGLU and down,
//! with down split over the intermediate dimension and its sums added into the residual
//! (`Tuning::fused_mlp`). The down matrix is read re-laid by `down_column_chunks`.

use super::skinny::GATE_UP_GROUP;
use super::to_i32;
use super::weight_layout::WeightLayout;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use crate::tuning::BULK_STAGES_RANGE;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::bf16;
use rayon::prelude::*;

/// The largest hidden size the kernel keeps its outputs' partial sums for (MF_MAX_HIDDEN
/// in mlp_fused.cu: 16 registers a thread). Qwen3-8B's is 4096.
pub const MLP_FUSED_MAX_HIDDEN: usize = 4096;
/// Threads per block: 8 multiplying warps and the producer warp (TM_THREADS).
const THREADS: u32 = 9 * 32;
/// Bytes of one ring stage (TM_STAGE_BYTES: 16 rows of 1 KB at a 1040-byte stride).
const STAGE_BYTES: u32 = 16 * (1024 + 16);

/// down [hidden, inter] row-major -> the fused kernel's chunks: for each group c of
/// `GATE_UP_GROUP` intermediate columns, the [hidden, 8] block Wd[:, 8c..8c + 8] row-major,
/// chunk after chunk. Element (o, j) of the input lands at (j / 8) * hidden * 8 + o * 8 +
/// j % 8. inter % 8 == 0.
pub fn down_column_chunks(wd: &[bf16], hidden: usize, inter: usize) -> Vec<bf16> {
    assert_eq!(wd.len(), hidden * inter, "down is not {hidden} x {inter}");
    assert!(
        inter.is_multiple_of(GATE_UP_GROUP),
        "inter {inter} % 8 != 0"
    );
    let g = GATE_UP_GROUP;
    // Element by element in parallel, straight into the output (100 MB a Qwen3-8B layer).
    (0..wd.len())
        .into_par_iter()
        .map(|i| {
            let (c, rest) = (i / (hidden * g), i % (hidden * g));
            let (o, j) = (rest / g, rest % g);
            wd[o * inter + c * g + j]
        })
        .collect()
}

/// The fused MLP's weights: interleaved gate|up [2 inter, hidden] (`interleave_gate_up`)
/// in `layout`, and down as `down_column_chunks`.
pub struct MlpFusedWeights<'a, 'b> {
    pub gate_up: &'a CudaView<'b, bf16>,
    pub layout: WeightLayout,
    pub down_chunks: &'a CudaView<'b, bf16>,
    pub inter: usize,
    pub hidden: usize,
}

/// y[o] += down(SwiGLU(x · gate|up))[o] for one token row: x [hidden] bf16 (normed), y
/// [hidden] f32 (the residual stream). `stages`: the ring's depth (`BULK_STAGES_RANGE`).
/// The adds into y come from every block in no fixed order, so y's last bits vary
/// between runs.
pub fn mlp_fused_bf16_into(
    gpu: &Gpu,
    x: &CudaView<'_, bf16>,
    w: &MlpFusedWeights<'_, '_>,
    stages: u32,
    y: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "mlp_fused_bf16";
    let (inter, hidden) = (w.inter, w.hidden);
    check(
        hidden > 0 && hidden.is_multiple_of(8) && hidden <= MLP_FUSED_MAX_HIDDEN,
        OP,
        || format!("hidden = {hidden}: needs a multiple of 8 up to {MLP_FUSED_MAX_HIDDEN}"),
    )?;
    check(inter > 0 && inter.is_multiple_of(GATE_UP_GROUP), OP, || {
        format!("inter = {inter} must be a positive multiple of {GATE_UP_GROUP}")
    })?;
    check(x.len() == hidden, OP, || {
        format!("x {} != one row of {hidden}", x.len())
    })?;
    check(y.len() == hidden, OP, || {
        format!("y {} != one row of {hidden}", y.len())
    })?;
    check(w.gate_up.len() == 2 * inter * hidden, OP, || {
        format!("gate|up {} != {} x {hidden}", w.gate_up.len(), 2 * inter)
    })?;
    check(w.down_chunks.len() == inter * hidden, OP, || {
        format!("down chunks {} != {inter} x {hidden}", w.down_chunks.len())
    })?;
    check(BULK_STAGES_RANGE.contains(&stages), OP, || {
        format!("{stages} ring stages; {BULK_STAGES_RANGE:?} supported")
    })?;
    let smem = stages * STAGE_BYTES;
    let tiles = (2 * inter / 16) as u32;
    let blocks = tiles.min(gpu.resident_blocks(OP, THREADS, smem)? * gpu.sms() as u32);
    let mut b = Launch::new(gpu, OP)?;
    b.input(x);
    b.input_aligned16(w.gate_up, "gate|up")?;
    b.input_aligned16(w.down_chunks, "down chunks")?;
    b.output(y)
        .i32(to_i32(OP, "inter", inter)?)
        .i32(hidden as i32)
        .i32(stages as i32)
        .i32(w.layout.arg());
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: smem,
    };
    // SAFETY: shapes checked above; hidden % 8 == 0 keeps every gate|up row and every
    // 16-byte piece of a down chunk 16-byte aligned (cudarc's allocations are 256-aligned).
    unsafe { b.launch(cfg) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::down_column_chunks;
    use half::bf16;

    #[test]
    fn down_chunks_hold_eight_columns_of_every_row() {
        let (hidden, inter) = (3, 16);
        let wd: Vec<bf16> = (0..hidden * inter)
            .map(|i| bf16::from_f32(i as f32))
            .collect();
        let out = down_column_chunks(&wd, hidden, inter);
        assert_eq!(out.len(), wd.len());
        for o in 0..hidden {
            for j in 0..inter {
                let at = (j / 8) * hidden * 8 + o * 8 + j % 8;
                assert_eq!(out[at], wd[o * inter + j], "({o}, {j})");
            }
        }
        // Chunk 1 starts with row 0's columns 8..16.
        assert_eq!(out[hidden * 8].to_f32(), 8.0);
    }
}
