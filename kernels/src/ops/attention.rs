//! Attention ops over the paged KV cache: q/k RMSNorm + RoPE + KV write, and GQA attention
//! of query rows over their pages. The caches of one layer are [num_slots, kv_heads *
//! head_dim] bf16 with slot = page * block_size + position % block_size (the CPU layout).

use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::bf16;

/// Head geometry shared by both ops.
#[derive(Debug, Clone, Copy)]
pub struct AttnDims {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
}

impl AttnDims {
    pub(crate) fn check(&self, op: &'static str) -> Result<()> {
        let AttnDims { heads, kv_heads, head_dim } = *self;
        check(kv_heads > 0 && heads % kv_heads == 0, op, || {
            format!("{heads} heads not a multiple of {kv_heads} kv heads")
        })?;
        // 4 values per lane in the attention kernel; RoPE rotates halves.
        check(head_dim % 2 == 0 && (2..=128).contains(&head_dim), op, || {
            format!("head_dim {head_dim} must be even and <= 128")
        })
    }
    pub fn q_dim(&self) -> usize {
        self.heads * self.head_dim
    }
    pub fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim
    }
}

pub struct RopeKvArgs<'a, 'b> {
    /// Fused projection output [T, q_dim + 2 * kv_dim], f32.
    pub qkv: &'a CudaView<'b, f32>,
    pub q_norm: &'a CudaView<'b, f32>,
    pub k_norm: &'a CudaView<'b, f32>,
    /// Position of each of the T tokens.
    pub positions: &'a CudaView<'b, i32>,
    /// KV slot of each token (< the caches' slot count; the caller computes them from
    /// block tables it has validated).
    pub slots: &'a CudaView<'b, i32>,
    pub theta: f32,
    pub eps: f32,
}

/// q_out = rope(rmsnorm(q) * q_norm); k_cache[slot] = rope(rmsnorm(k) * k_norm);
/// v_cache[slot] = v; all bf16.
pub fn qk_norm_rope_kv_into(
    gpu: &Gpu,
    d: AttnDims,
    a: &RopeKvArgs<'_, '_>,
    q_out: &mut CudaViewMut<'_, bf16>,
    k_cache: &mut CudaViewMut<'_, bf16>,
    v_cache: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "qk_norm_rope_kv";
    d.check(OP)?;
    let t = a.positions.len();
    let (qd, kvd) = (d.q_dim(), d.kv_dim());
    check(a.qkv.len() == t * (qd + 2 * kvd), OP, || {
        format!("qkv {} != {t} x ({qd} + 2 x {kvd})", a.qkv.len())
    })?;
    check(a.slots.len() == t, OP, || format!("{} slots for {t} tokens", a.slots.len()))?;
    check(a.q_norm.len() == d.head_dim && a.k_norm.len() == d.head_dim, OP, || {
        "q_norm/k_norm must have head_dim entries".into()
    })?;
    check(q_out.len() == t * qd, OP, || format!("q_out {} != {t} x {qd}", q_out.len()))?;
    check(k_cache.len() == v_cache.len() && k_cache.len() % kvd == 0, OP, || {
        format!("caches {} / {} not slots x {kvd}", k_cache.len(), v_cache.len())
    })?;
    if t == 0 {
        return Ok(());
    }
    let (h, kv, hd) = (
        to_i32(OP, "heads", d.heads)?,
        to_i32(OP, "kv_heads", d.kv_heads)?,
        to_i32(OP, "head_dim", d.head_dim)?,
    );
    let mut b = Launch::new(gpu, OP)?;
    b.input(a.qkv).input(a.q_norm).input(a.k_norm).input(a.positions).input(a.slots);
    b.output(q_out).output(k_cache).output(v_cache);
    b.i32(h).i32(kv).i32(hd).f32(a.theta).f32(a.eps);
    let cfg = LaunchConfig {
        grid_dim: (t as u32, (d.heads + 2 * d.kv_heads) as u32, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: shapes checked above; slots are validated by the caller.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

pub struct PagedAttnArgs<'a, 'b> {
    /// Queries [R, q_dim] bf16, already normed and rotated.
    pub q: &'a CudaView<'b, bf16>,
    pub k_cache: &'a CudaView<'b, bf16>,
    pub v_cache: &'a CudaView<'b, bf16>,
    /// Concatenated block tables (page ids).
    pub tables: &'a CudaView<'b, i32>,
    /// Row r's block table starts at tables[table_offs[r]].
    pub table_offs: &'a CudaView<'b, i32>,
    /// Row r attends to positions 0..ctx_lens[r] (>= 1).
    pub ctx_lens: &'a CudaView<'b, i32>,
    pub block_size: usize,
    /// Every row's positions before its last were written by earlier launches (a decode
    /// step: one new token per sequence), so the decode kernel reads them before the
    /// previous kernel finishes (only q and the new K/V wait for it). False when a row's
    /// earlier positions may be this step's tokens (prefill).
    pub settled: bool,
}

impl PagedAttnArgs<'_, '_> {
    /// The checks every attention kernel needs: q and `out_len` hold rows x q_dim, one table
    /// offset per row, equal caches of whole slots, a block size. Returns the row count.
    pub(crate) fn check(&self, op: &'static str, d: AttnDims, out_len: usize) -> Result<usize> {
        let r = self.ctx_lens.len();
        let qd = d.q_dim();
        check(self.q.len() == r * qd && out_len == r * qd, op, || {
            format!("q {} / out {out_len} != {r} x {qd}", self.q.len())
        })?;
        check(self.table_offs.len() == r, op, || {
            format!("{} table offsets for {r} rows", self.table_offs.len())
        })?;
        check(self.k_cache.len() == self.v_cache.len() && self.k_cache.len() % d.kv_dim() == 0, op, || {
            "k/v caches differ or are not slots x kv_dim".into()
        })?;
        check(self.block_size > 0, op, || "block_size 0".into())?;
        Ok(r)
    }

    /// Push q, the caches, tables, offsets and context lengths: the attention kernels'
    /// first six parameters, in this order.
    pub(crate) fn push(&self, b: &mut Launch<'_>) {
        b.input(self.q)
            .input(self.k_cache)
            .input(self.v_cache)
            .input(self.tables)
            .input(self.table_offs)
            .input(self.ctx_lens);
    }
}
