//! Split-context GQA attention over the paged KV cache (decode_attention.cu): the context
//! of each row is cut into `splits` parts that run as separate blocks, and a second kernel
//! merges their partial softmax states. With one split it writes the output directly.

use super::attention::{AttnDims, PagedAttnArgs, RopeKvArgs, check_caches, check_paging};
use super::skinny::SKINNY_MAX_ROWS;
use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::{Gpu, Tuning};
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::bf16;

/// Query heads per KV head and head_dim the kernel holds in shared memory.
const MAX_GROUP: usize = 8;
const MAX_HEAD_DIM: usize = 128;
/// Must match DA_MAXSPLITS in decode_attention.cu (the combine kernel's one warp).
pub const MAX_SPLITS: usize = 32;
/// Splits for `rows` rows: about `Tuning::attention_blocks` blocks (default four per SM of
/// an H100/H200: two per SM gave batch 8 only 5 splits of ~90 positions at ctx 452, and the
/// split kernel lost to the one-block-per-head kernel there, 27 vs 24 us), at most
/// MAX_SPLITS. The same count for every step of a given batch size, so a captured graph
/// stays valid.
pub fn attention_splits(gpu: &Gpu, rows: usize, kv_heads: usize) -> usize {
    (gpu.tuning().attention_blocks as usize)
        .div_ceil((rows * kv_heads).max(1))
        .clamp(1, MAX_SPLITS)
}

/// Scratch the split path needs: (acc floats, max/sum floats).
pub fn attention_partials_len(rows: usize, d: AttnDims, splits: usize) -> (usize, usize) {
    let parts = rows * d.heads * splits;
    (parts * d.head_dim, parts * 2)
}

/// The split kernels' limits (group size, head_dim, split count) and, with several splits,
/// room for every partial of `rows` rows.
fn check_splits(
    op: &'static str,
    d: AttnDims,
    rows: usize,
    splits: usize,
    part_acc: usize,
    part_ml: usize,
) -> Result<()> {
    d.check(op)?;
    check(d.heads / d.kv_heads <= MAX_GROUP, op, || {
        format!(
            "{} query heads per kv head; at most {MAX_GROUP}",
            d.heads / d.kv_heads
        )
    })?;
    check(d.head_dim <= MAX_HEAD_DIM, op, || {
        format!("head_dim {} > {MAX_HEAD_DIM}", d.head_dim)
    })?;
    check((1..=MAX_SPLITS).contains(&splits), op, || {
        format!("{splits} splits; 1..={MAX_SPLITS}")
    })?;
    if splits > 1 {
        let (na, nm) = attention_partials_len(rows, d, splits);
        check(part_acc >= na && part_ml >= nm, op, || {
            format!("partials {part_acc} / {part_ml} < {na} / {nm}")
        })?;
    }
    Ok(())
}

/// The split kernels' grid: (row, kv head, split) blocks of 128 threads.
fn split_grid(rows: usize, d: AttnDims, splits: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (rows as u32, d.kv_heads as u32, splits as u32),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The second kernel of a split launch: merge every (row, head)'s partials into `out`.
fn combine(
    gpu: &Gpu,
    rows: usize,
    d: AttnDims,
    splits: usize,
    part_acc: &CudaView<'_, f32>,
    part_ml: &CudaView<'_, f32>,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "decode_attention_combine";
    let mut b = Launch::new(gpu, OP)?;
    b.input(part_acc)
        .input(part_ml)
        .output(out)
        .i32(to_i32(OP, "heads", d.heads)?)
        .i32(to_i32(OP, "head_dim", d.head_dim)?)
        .i32(splits as i32);
    let cfg = LaunchConfig {
        grid_dim: (rows as u32, d.heads as u32, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the caller checked the partials (check_splits) and out (rows x q_dim), and
    // launched the split kernel that wrote every partial this one reads.
    unsafe { b.launch(cfg) }
}

/// out[r, head] = softmax(q k^T / sqrt(head_dim)) v over row r's context. `part_acc` and
/// `part_ml` must hold `attention_partials_len(rows, d, splits)` floats when splits > 1;
/// a second kernel merges the splits.
pub fn decode_attention_into(
    gpu: &Gpu,
    d: AttnDims,
    a: &PagedAttnArgs<'_, '_>,
    splits: usize,
    part_acc: &mut CudaViewMut<'_, f32>,
    part_ml: &mut CudaViewMut<'_, f32>,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "decode_attention";
    let r = a.ctx_lens.len();
    check_splits(OP, d, r, splits, part_acc.len(), part_ml.len())?;
    a.check(OP, d, out.len())?;
    if r == 0 {
        return Ok(());
    }
    let (h, kv, hd, bs) = (
        to_i32(OP, "heads", d.heads)?,
        to_i32(OP, "kv_heads", d.kv_heads)?,
        to_i32(OP, "head_dim", d.head_dim)?,
        to_i32(OP, "block_size", a.block_size)?,
    );
    let scale = 1.0f32 / (d.head_dim as f32).sqrt();
    let mut b = Launch::new(gpu, OP)?;
    a.push(&mut b);
    b.output(&mut *part_acc)
        .output(&mut *part_ml)
        .output(&mut *out);
    let early = a.settled && gpu.tuning().attention_early_loads;
    b.i32(h)
        .i32(kv)
        .i32(hd)
        .i32(bs)
        .f32(scale)
        .i32(early as i32);
    // SAFETY: shapes checked above; tables/offsets/ctx_lens are validated by the caller,
    // and the partials hold every (row, head, split) when splits > 1.
    unsafe { b.launch(split_grid(r, d, splits)) }?;
    if splits == 1 {
        return Ok(());
    }
    combine(
        gpu,
        r,
        d,
        splits,
        &part_acc.as_view(),
        &part_ml.as_view(),
        out,
    )
}

/// Whether a step of `rows` rows takes `decode_attention_rope_into` instead of
/// `qk_norm_rope_kv_into` + `decode_attention_into` under `t`: a settled step (one new token
/// per row) on the split kernel (rows <= SKINNY_MAX_ROWS; more go to the prefill kernel),
/// with `Tuning::attention_rope` and the early loads it always does both on.
pub fn fold_rope(t: &Tuning, rows: usize, settled: bool) -> bool {
    settled && rows <= SKINNY_MAX_ROWS && t.attention_rope && t.attention_early_loads
}

/// A decode step's paging for `decode_attention_rope_into`: `PagedAttnArgs` without q and
/// the caches (the op takes those mutably, since it writes the new token into them).
pub struct DecodeRopeArgs<'a, 'b> {
    pub rope: &'a RopeKvArgs<'a, 'b>,
    pub tables: &'a CudaView<'b, i32>,
    pub table_offs: &'a CudaView<'b, i32>,
    /// Row r attends to positions 0..ctx_lens[r] (>= 1); its new token is the last one,
    /// at `rope.positions[r]` (= ctx_lens[r] - 1) in `rope.slots[r]`.
    pub ctx_lens: &'a CudaView<'b, i32>,
    pub block_size: usize,
}

/// `qk_norm_rope_kv_into` followed by `decode_attention_into`, for a decode step (one new
/// token per row, every earlier position already in the caches: `PagedAttnArgs::settled`),
/// in one kernel: each block norms and rotates the q heads and the new k it needs itself,
/// and the new K/V go to the caches. Same outputs, bit for bit (rope.cuh); one kernel and
/// its hand-off fewer. The older positions are read before the wait, as `settled` allows.
#[allow(clippy::too_many_arguments)]
pub fn decode_attention_rope_into(
    gpu: &Gpu,
    d: AttnDims,
    a: &DecodeRopeArgs<'_, '_>,
    splits: usize,
    k_cache: &mut CudaViewMut<'_, bf16>,
    v_cache: &mut CudaViewMut<'_, bf16>,
    part_acc: &mut CudaViewMut<'_, f32>,
    part_ml: &mut CudaViewMut<'_, f32>,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "decode_attention_rope";
    let r = a.ctx_lens.len();
    check_splits(OP, d, r, splits, part_acc.len(), part_ml.len())?;
    a.rope.check(OP, d, r)?;
    check_paging(OP, r, a.table_offs.len(), a.block_size)?;
    check_caches(OP, d, k_cache.len(), v_cache.len())?;
    let qd = d.q_dim();
    check(out.len() == r * qd, OP, || {
        format!("out {} != {r} x {qd}", out.len())
    })?;
    if r == 0 {
        return Ok(());
    }
    let (h, kv, hd, bs) = (
        to_i32(OP, "heads", d.heads)?,
        to_i32(OP, "kv_heads", d.kv_heads)?,
        to_i32(OP, "head_dim", d.head_dim)?,
        to_i32(OP, "block_size", a.block_size)?,
    );
    let scale = 1.0f32 / (d.head_dim as f32).sqrt();
    let rp = a.rope;
    let mut b = Launch::new(gpu, OP)?;
    b.input(rp.qkv)
        .input(rp.q_norm)
        .input(rp.k_norm)
        .input(rp.positions)
        .input(rp.slots);
    // Read (older positions) and written (the new token's slot): each cache twice.
    b.output(k_cache)
        .output(v_cache)
        .output(k_cache)
        .output(v_cache);
    b.input(a.tables).input(a.table_offs).input(a.ctx_lens);
    b.output(&mut *part_acc)
        .output(&mut *part_ml)
        .output(&mut *out);
    b.i32(h)
        .i32(kv)
        .i32(hd)
        .i32(bs)
        .f32(scale)
        .f32(rp.theta)
        .f32(rp.eps);
    // SAFETY: shapes checked above; tables/offsets/ctx_lens, positions and slots are
    // validated by the caller, and the partials hold every (row, head, split) when
    // splits > 1.
    unsafe { b.launch(split_grid(r, d, splits)) }?;
    if splits == 1 {
        return Ok(());
    }
    combine(
        gpu,
        r,
        d,
        splits,
        &part_acc.as_view(),
        &part_ml.as_view(),
        out,
    )
}
