//! Causal prefill attention on the tensor cores (prefill_attention.cu): blocks of 16 query
//! rows x one KV head share each staged K/V tile across the rows and the KV head's query
//! heads. Same inputs and output as `decode_attention_into` with one split.

use super::attention::{AttnDims, PagedAttnArgs};
use super::decode_attention::{SplitScratch, attention_partials_len, merge_splits};
use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
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
    launch(gpu, "prefill_attention", d, a, (None, 1, None), out)
}

/// Most nodes a verify tree may have (`tree_attention_into`'s 64-bit masks).
pub const MAX_TREE_NODES: usize = 64;

/// Most context splits of a tree attention (`tree_attention_splits`).
pub const MAX_TREE_SPLITS: usize = 8;

/// The context splits a tree attention over `rows` rows takes: enough blocks of 16 rows x
/// one KV head x split to fill the tuning's attention block target (as decode's
/// `attention_splits`), at most `MAX_TREE_SPLITS` (one 64-position tile each at ~500
/// positions; more would merge more empty partials than they save).
pub fn tree_attention_splits(gpu: &Gpu, rows: usize, kv_heads: usize) -> usize {
    let blocks = (rows.div_ceil(ROWS_PER_BLOCK) * kv_heads).max(1);
    (gpu.tuning().attention_blocks as usize).div_ceil(blocks).clamp(1, MAX_TREE_SPLITS)
}

/// `prefill_attention_into` for the nodes of speculative verify trees: `tree` holds three
/// ints per row, (lo, mask_lo, mask_hi). Row r sees positions below lo (its sequence's
/// committed KV) and position lo + j (tree node j, j < 64) where bit j of the mask is set,
/// all below ctx_lens[r]. The caller builds the masks from trees it has validated. With
/// `splits` > 1 the context splits over that many blocks per row block and KV head, whose
/// partial states (`attention_partials_len(rows, d, splits)` in `scratch`) a second kernel
/// merges.
pub fn tree_attention_into(
    gpu: &Gpu,
    d: AttnDims,
    a: &PagedAttnArgs<'_, '_>,
    tree: &CudaView<'_, i32>,
    (splits, scratch): (usize, &mut SplitScratch<'_>),
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "tree_attention";
    check(tree.len() == 3 * a.ctx_lens.len(), OP, || {
        format!("{} tree ints for {} rows (3 per row)", tree.len(), a.ctx_lens.len())
    })?;
    check((1..=MAX_TREE_SPLITS).contains(&splits), OP, || format!("{splits} splits; 1..={MAX_TREE_SPLITS}"))?;
    let r = a.ctx_lens.len();
    if splits > 1 {
        let (na, nm) = attention_partials_len(r, d, splits);
        let (sa, sm) = (scratch.acc.len(), scratch.ml.len());
        check(sa >= na && sm >= nm, OP, || format!("partials {sa} / {sm} < {na} / {nm}"))?;
    }
    launch(gpu, OP, d, a, (Some(tree), splits, Some(&mut *scratch)), out)?;
    if splits == 1 || r == 0 {
        return Ok(());
    }
    let (h, hd) = (to_i32(OP, "heads", d.heads)?, to_i32(OP, "head_dim", d.head_dim)?);
    merge_splits(gpu, (r, d.heads, splits), (h, hd), scratch, out)
}

fn launch(
    gpu: &Gpu,
    op: &'static str,
    d: AttnDims,
    a: &PagedAttnArgs<'_, '_>,
    (tree, splits, scratch): (Option<&CudaView<'_, i32>>, usize, Option<&mut SplitScratch<'_>>),
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    d.check(op)?;
    check(prefill_attention_supported(d), op, || {
        format!(
            "head_dim {} / {} query heads per kv head: needs head_dim {PREFILL_HEAD_DIM} and at most {MAX_GROUP}",
            d.head_dim,
            d.heads / d.kv_heads
        )
    })?;
    let r = a.check(op, d, out.len())?;
    if r == 0 {
        return Ok(());
    }
    let (t, h, kv, bs) = (
        to_i32(op, "rows", r)?,
        to_i32(op, "heads", d.heads)?,
        to_i32(op, "kv_heads", d.kv_heads)?,
        to_i32(op, "block_size", a.block_size)?,
    );
    let scale = 1.0f32 / (d.head_dim as f32).sqrt();
    let mut b = Launch::new(gpu, "prefill_attention")?;
    a.push(&mut b);
    match tree {
        Some(tv) => b.input(tv),
        None => b.null(),
    };
    b.output(out);
    match scratch {
        Some(sc) if splits > 1 => b.output(&mut sc.acc).output(&mut sc.ml),
        _ => b.null().null(),
    };
    b.i32(t).i32(h).i32(kv).i32(bs).f32(scale);
    let cfg = LaunchConfig {
        grid_dim: (r.div_ceil(ROWS_PER_BLOCK) as u32, d.kv_heads as u32, splits as u32),
        block_dim: (32 * (d.heads / d.kv_heads) as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: shapes checked above; tables, offsets, ctx_lens and tree masks are validated
    // by the caller (every row's table covers its context, masks name nodes below it); with
    // splits the tree's caller checked the partials hold every (row, head, split).
    unsafe { b.launch(cfg) }?;
    Ok(())
}
