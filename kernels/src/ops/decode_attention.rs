//! Split-context GQA attention over the paged KV cache (decode_attention.cu): the context
//! of each row is cut into `splits` parts that run as separate blocks, whose partial
//! softmax states a second kernel merges, or the blocks themselves inside a thread block
//! cluster (`uses_cluster`). With one split it writes the output directly.

use super::attention::{AttnDims, PagedAttnArgs};
use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::{Gpu, Tuning};
use crate::launch::Launch;
use cudarc::driver::{CudaViewMut, LaunchConfig};
use half::bf16;

/// Query heads per KV head and head_dim the kernel holds in shared memory.
const MAX_GROUP: usize = 8;
const MAX_HEAD_DIM: usize = 128;
/// Must match DA_MAXSPLITS in decode_attention.cu (the combine kernel's one warp).
pub const MAX_SPLITS: usize = 32;
/// Splits merged inside one thread block cluster: the portable cluster size
/// (DA_MAXCLUSTER).
pub const MAX_CLUSTER_SPLITS: usize = 8;
/// Splits for `rows` rows: about `Tuning::attention_blocks` blocks, at most MAX_SPLITS; one
/// once the (row, kv head) pairs are as many as the `sms` SMs: then every SM has a pair's
/// chunks to stream, and a split would only add a merge (24 rows of Qwen3-8B, 192 pairs:
/// one split beat two merged in a cluster by 1.8 % of the FP8 step, 32 rows by 1.2 %;
/// engine/PERF-LOG.md step 85).
/// Counts up to twice MAX_CLUSTER_SPLITS are capped at MAX_CLUSTER_SPLITS and merge in a
/// cluster (`uses_cluster`); larger ones keep the merge kernel, since a cluster would cut
/// their parallelism by more than half (batch 1: 32 -> 8 splits measured slower,
/// engine/PERF-LOG.md steps 19-20). The same count for every step of a given batch size, so a
/// captured graph stays valid.
pub fn attention_splits(gpu: &Gpu, rows: usize, kv_heads: usize) -> usize {
    split_count(&gpu.tuning(), gpu.sms(), rows, kv_heads)
}

/// `attention_splits` for a tuning (no GPU needed).
pub fn split_count(t: &Tuning, sms: usize, rows: usize, kv_heads: usize) -> usize {
    if rows * kv_heads >= sms {
        return 1;
    }
    let s = (t.attention_blocks as usize).div_ceil((rows * kv_heads).max(1)).clamp(1, MAX_SPLITS);
    if s <= 2 * MAX_CLUSTER_SPLITS { s.min(MAX_CLUSTER_SPLITS) } else { s }
}

/// The split kernel for geometry `d`: on the tensor cores where head_dim is 128 and a KV
/// head has at most 8 query heads (Qwen3's geometries), in clusters (`uses_cluster`) or
/// not; else on the CUDA cores, in clusters in the pair layout, outside them in the fast
/// layout (eight lanes per position) where head_dim % 32 == 0, else the pair layout. The
/// CUDA-core clusters keep the pair layout: there the fast scores measured slower with
/// FP8 weights (engine/PERF-LOG.md steps 27-29).
pub fn attention_kernel(d: AttnDims, cluster: bool) -> &'static str {
    let mma = d.head_dim == 128 && d.heads <= MAX_GROUP * d.kv_heads;
    match (mma, cluster) {
        (true, true) => "decode_attention_mma_cluster",
        (true, false) => "decode_attention_mma",
        (false, true) => "decode_attention_cluster",
        (false, false) if d.head_dim.is_multiple_of(32) => "decode_attention_d32",
        (false, false) => "decode_attention",
    }
}

/// Whether `splits` merge inside a thread block cluster rather than in the merge kernel.
pub fn uses_cluster(splits: usize) -> bool {
    (2..=MAX_CLUSTER_SPLITS).contains(&splits)
}

/// Scratch the split path needs: (acc floats, max/sum floats).
pub fn attention_partials_len(rows: usize, d: AttnDims, splits: usize) -> (usize, usize) {
    let parts = rows * d.heads * splits;
    (parts * d.head_dim, parts * 2)
}

/// The split path's scratch: the partial states (`attention_partials_len`).
pub struct SplitScratch<'a> {
    pub acc: CudaViewMut<'a, f32>,
    pub ml: CudaViewMut<'a, f32>,
}

/// out[r, head] = softmax(q k^T / sqrt(head_dim)) v over row r's context. With splits > 1
/// the scratch must hold `attention_partials_len(rows, d, splits)` floats, and the splits
/// merge in a cluster (`uses_cluster`) or in a second kernel.
pub fn decode_attention_into(
    gpu: &Gpu,
    d: AttnDims,
    a: &PagedAttnArgs<'_, '_>,
    splits: usize,
    scratch: &mut SplitScratch<'_>,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "decode_attention";
    let r = check_args(OP, d, a, splits, scratch, out.len())?;
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
    // Several splits merge in a cluster or in the second kernel below.
    let cluster = uses_cluster(splits);
    let mut b = Launch::new(gpu, attention_kernel(d, cluster))?;
    a.push(&mut b);
    b.output(&mut scratch.acc).output(&mut scratch.ml).output(&mut *out);
    b.i32(h).i32(kv).i32(hd).i32(bs).f32(scale).i32(a.settled as i32);
    let cfg = LaunchConfig {
        grid_dim: (r as u32, d.kv_heads as u32, splits as u32),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    if cluster {
        b.cluster((1, 1, splits as u32));
    }
    // SAFETY: shapes checked above; tables/offsets/ctx_lens are validated by the caller,
    // and the partials hold every (row, head, split) when splits > 1.
    unsafe { b.launch(cfg) }?;
    if splits == 1 || cluster {
        return Ok(());
    }
    merge_splits(gpu, (r, d.heads, splits), (h, hd), scratch, out)
}

/// The checks `decode_attention_into` makes before it launches anything: the geometry the
/// kernels hold, the split count, the paged arguments, and the partials' room. Returns the
/// row count.
fn check_args(
    op: &'static str,
    d: AttnDims,
    a: &PagedAttnArgs<'_, '_>,
    splits: usize,
    scratch: &SplitScratch<'_>,
    out_len: usize,
) -> Result<usize> {
    d.check(op)?;
    check(d.heads / d.kv_heads <= MAX_GROUP, op, || {
        format!("{} query heads per kv head; at most {MAX_GROUP}", d.heads / d.kv_heads)
    })?;
    check(d.head_dim <= MAX_HEAD_DIM, op, || format!("head_dim {} > {MAX_HEAD_DIM}", d.head_dim))?;
    check((1..=MAX_SPLITS).contains(&splits), op, || format!("{splits} splits; 1..={MAX_SPLITS}"))?;
    let r = a.check(op, d, out_len)?;
    if splits > 1 {
        let (na, nm) = attention_partials_len(r, d, splits);
        let (sa, sm) = (scratch.acc.len(), scratch.ml.len());
        check(sa >= na && sm >= nm, op, || format!("partials {sa} / {sm} < {na} / {nm}"))?;
    }
    Ok(r)
}

/// The merge kernel over the partial states of `rows` x `heads` x `splits` (checked by
/// the caller) into out; `(h, hd)`: heads and head_dim as the kernel's ints.
pub(super) fn merge_splits(
    gpu: &Gpu,
    (rows, heads, splits): (usize, usize, usize),
    (h, hd): (i32, i32),
    scratch: &SplitScratch<'_>,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    let mut b = Launch::new(gpu, "decode_attention_combine")?;
    b.input(&scratch.acc.as_view())
        .input(&scratch.ml.as_view())
        .output(out)
        .i32(h)
        .i32(hd)
        .i32(splits as i32);
    let cfg = LaunchConfig {
        grid_dim: (rows as u32, heads as u32, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the caller checked the shapes, and the split kernel before this one wrote
    // every partial it reads.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{AttnDims, MAX_CLUSTER_SPLITS, MAX_SPLITS, attention_kernel, split_count, uses_cluster};
    use crate::gpu::Tuning;

    #[test]
    fn each_geometry_takes_its_kernel() {
        let dims = |heads, kv_heads, head_dim| AttnDims { heads, kv_heads, head_dim };
        // Qwen3-8B (32 / 8 heads), 0.6B (16 / 8), 14B (40 / 8: 5 per KV head).
        let (q8b, q06b, q14b) = (dims(32, 8, 128), dims(16, 8, 128), dims(40, 8, 128));
        for (d, cluster, want) in [
            (q8b, false, "decode_attention_mma"),
            (q06b, false, "decode_attention_mma"),
            (q14b, false, "decode_attention_mma"),
            (q8b, true, "decode_attention_mma_cluster"),
            (dims(72, 8, 128), false, "decode_attention_d32"),
            (dims(4, 2, 32), false, "decode_attention_d32"),
            (dims(4, 2, 32), true, "decode_attention_cluster"),
            (dims(6, 1, 8), false, "decode_attention"),
            (dims(4, 1, 48), false, "decode_attention"),
        ] {
            assert_eq!(attention_kernel(d, cluster), want, "{d:?} cluster {cluster}");
        }
        let shipped: Vec<&str> = crate::sources::ALL.iter().flat_map(|s| s.kernels.iter().copied()).collect();
        for d in [q8b, q06b, q14b, dims(4, 2, 32), dims(6, 1, 8)] {
            for c in [false, true] {
                assert!(shipped.contains(&attention_kernel(d, c)));
            }
        }
    }

    #[test]
    fn clusters_take_only_split_counts_they_at_least_halve() {
        // The default target, 384, with Qwen3-8B's 8 kv heads on 132 SMs: batch 1 32 splits
        // (the merge kernel), batch 4 12 capped at 8 (a cluster), batch 8 6 (a cluster),
        // batch 16 (128 pairs) 3; from batch 17 (136 pairs) on, one.
        let d = Tuning::default();
        for (rows, want, cluster) in
            [(1, 32, false), (4, 8, true), (8, 6, true), (16, 3, true), (17, 1, false)]
        {
            assert_eq!(split_count(&d, 132, rows, 8), want, "rows {rows}");
            assert_eq!(uses_cluster(want), cluster, "rows {rows}");
        }
        assert!(!uses_cluster(32) && !uses_cluster(17) && !uses_cluster(1));
        assert!(uses_cluster(8) && uses_cluster(5) && uses_cluster(2));
        // 16 splits are capped at 8, 17 are not.
        let batch_1_at = |blocks| split_count(&Tuning { attention_blocks: blocks, ..d }, 132, 1, 8);
        assert_eq!(batch_1_at(128), MAX_CLUSTER_SPLITS);
        assert_eq!(batch_1_at(129), 17);
        assert_eq!(batch_1_at(4096), MAX_SPLITS);
    }
}
