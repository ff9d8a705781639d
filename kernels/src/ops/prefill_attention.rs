//! Causal prefill attention on the tensor cores (prefill_attention.cu): blocks of 16 query
//! rows x one KV head share each staged K/V tile across the rows and the KV head's query
//! heads. Same inputs and output as `decode_attention_into` with one split.

use super::attention::{AttnDims, PagedAttnArgs};
use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaViewMut, LaunchConfig};
use half::bf16;

/// The only head_dim the kernel is built for (every Qwen3 size), and its other limits.
pub const PREFILL_HEAD_DIM: usize = 128;
const MAX_GROUP: usize = 8;
const ROWS_PER_BLOCK: usize = 16;

/// Whether `prefill_attention_into` takes this geometry (else use `decode_attention_into`).
pub fn prefill_attention_supported(d: AttnDims) -> bool {
    d.head_dim == PREFILL_HEAD_DIM
        && d.kv_heads > 0
        && d.heads.is_multiple_of(d.kv_heads)
        && d.heads / d.kv_heads <= MAX_GROUP
}

/// out[r, head] = softmax(q k^T / sqrt(head_dim)) v over positions 0..ctx_lens[r] of row
/// r's block table; rows may come from several sequences.
pub fn prefill_attention_into(
    gpu: &Gpu,
    d: AttnDims,
    a: &PagedAttnArgs<'_, '_>,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "prefill_attention";
    d.check(OP)?;
    check(prefill_attention_supported(d), OP, || {
        format!(
            "head_dim {} / {} query heads per kv head: needs head_dim {PREFILL_HEAD_DIM} and at most {MAX_GROUP}",
            d.head_dim,
            d.heads / d.kv_heads
        )
    })?;
    let r = a.check(OP, d, out.len())?;
    if r == 0 {
        return Ok(());
    }
    let (t, h, kv, bs) = (
        to_i32(OP, "rows", r)?,
        to_i32(OP, "heads", d.heads)?,
        to_i32(OP, "kv_heads", d.kv_heads)?,
        to_i32(OP, "block_size", a.block_size)?,
    );
    let scale = 1.0f32 / (d.head_dim as f32).sqrt();
    let mut b = Launch::new(gpu, OP)?;
    a.push(&mut b);
    b.output(out).i32(t).i32(h).i32(kv).i32(bs).f32(scale);
    let cfg = LaunchConfig {
        grid_dim: (r.div_ceil(ROWS_PER_BLOCK) as u32, d.kv_heads as u32, 1),
        block_dim: (32 * (d.heads / d.kv_heads) as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: shapes checked above; tables, offsets and ctx_lens are validated by the
    // caller (every row's table covers its context).
    unsafe { b.launch(cfg) }?;
    Ok(())
}
