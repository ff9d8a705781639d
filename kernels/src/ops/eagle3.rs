//! The EAGLE-3 draft layer's own ops (eagle3.cu): its two-norm input, RoPE without q/k
//! norm, row gathers, and the top-k log-probabilities per row. The rest of the draft layer
//! runs on the target's ops.

use super::attention::AttnDims;
use super::to_i32;
use crate::error::{Result, check};
use crate::gpu::Gpu;
use crate::launch::Launch;
use cudarc::driver::{CudaView, CudaViewMut, LaunchConfig};
use half::bf16;

const THREADS: u32 = 256;

fn rows_cfg(rows: usize, threads: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
}

/// The draft layer's norms and weights for `eagle3_input_into`.
pub struct Eagle3Norms<'a, 'b> {
    pub input_norm: &'a CudaView<'b, f32>,
    pub hidden_norm: &'a CudaView<'b, f32>,
    pub eps: f32,
    /// vLLM's `norm_before_residual`: the residual is the normed hidden.
    pub norm_residual: bool,
}

/// out[r] = [bf16(rmsnorm(embed[ids[r]]) * input_norm), bf16(rmsnorm(hidden[r]) * hidden_norm)]
/// (out is [rows, 2 x hidden]); with `norm_residual` hidden[r] becomes the normed hidden.
/// Ids must be rows of `embed` (the caller validated them).
pub fn eagle3_input_into(
    gpu: &Gpu,
    ids: &CudaView<'_, u32>,
    embed: &CudaView<'_, bf16>,
    norms: &Eagle3Norms<'_, '_>,
    hidden: &mut CudaViewMut<'_, f32>,
    out: &mut CudaViewMut<'_, bf16>,
) -> Result<()> {
    const OP: &str = "eagle3_input";
    let (rows, h) = (ids.len(), norms.input_norm.len());
    check(h > 0 && norms.hidden_norm.len() == h, OP, || {
        format!("norms of {} and {}", h, norms.hidden_norm.len())
    })?;
    check(embed.len().is_multiple_of(h), OP, || format!("embed {} is not rows x {h}", embed.len()))?;
    check(hidden.len() == rows * h, OP, || format!("hidden {} != {rows} x {h}", hidden.len()))?;
    check(out.len() == rows * 2 * h, OP, || format!("out {} != {rows} x 2 x {h}", out.len()))?;
    if rows == 0 {
        return Ok(());
    }
    let mut b = Launch::new(gpu, OP)?;
    b.input(ids).input(embed).input(norms.input_norm).input(norms.hidden_norm);
    b.output(hidden).output(out).i32(to_i32(OP, "hidden", h)?).f32(norms.eps);
    b.i32(norms.norm_residual as i32);
    // SAFETY: shapes checked above; ids are validated by the caller.
    unsafe { b.launch(rows_cfg(rows, THREADS)) }?;
    Ok(())
}

/// q_out = rope(q); k_cache[slot] = rope(k); v_cache[slot] = v, from qkv [T, q_dim + 2 kv_dim]
/// f32 at `positions` (Llama attention: `qk_norm_rope_kv_into` without the norms). Slots
/// must be rows of the caches (the caller computed them from tables it validated).
pub fn rope_kv_into(
    gpu: &Gpu,
    d: AttnDims,
    qkv: &CudaView<'_, f32>,
    (positions, slots): (&CudaView<'_, i32>, &CudaView<'_, i32>),
    theta: f32,
    q_out: &mut CudaViewMut<'_, bf16>,
    (k_cache, v_cache): (&mut CudaViewMut<'_, bf16>, &mut CudaViewMut<'_, bf16>),
) -> Result<()> {
    const OP: &str = "rope_kv";
    d.check(OP)?;
    let t = positions.len();
    let (qd, kvd) = (d.q_dim(), d.kv_dim());
    check(qkv.len() == t * (qd + 2 * kvd), OP, || format!("qkv {} != {t} x ({qd} + 2 x {kvd})", qkv.len()))?;
    check(slots.len() == t, OP, || format!("{} slots for {t} tokens", slots.len()))?;
    check(q_out.len() == t * qd, OP, || format!("q_out {} != {t} x {qd}", q_out.len()))?;
    check(k_cache.len() == v_cache.len() && k_cache.len().is_multiple_of(kvd), OP, || {
        format!("caches {} / {} not slots x {kvd}", k_cache.len(), v_cache.len())
    })?;
    if t == 0 {
        return Ok(());
    }
    let mut b = Launch::new(gpu, OP)?;
    b.input(qkv).input(positions).input(slots).output(q_out).output(k_cache).output(v_cache);
    b.i32(to_i32(OP, "heads", d.heads)?).i32(to_i32(OP, "kv_heads", d.kv_heads)?);
    b.i32(to_i32(OP, "head_dim", d.head_dim)?).f32(theta);
    let cfg = LaunchConfig {
        grid_dim: (t as u32, (d.heads + 2 * d.kv_heads) as u32, 1),
        block_dim: (64, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: shapes checked above; slots are validated by the caller.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

/// A row type `rows_gather_into` moves.
pub trait GatherRow: cudarc::driver::DeviceRepr {
    const KERNEL: &'static str;
}
impl GatherRow for bf16 {
    const KERNEL: &'static str = "rows_gather_bf16";
}
impl GatherRow for f32 {
    const KERNEL: &'static str = "rows_gather_f32";
}

/// out[r] = src[idx[r]] over rows of `width`. Indices must be rows of `src` (the caller
/// built them).
pub fn rows_gather_into<T: GatherRow>(
    gpu: &Gpu,
    src: &CudaView<'_, T>,
    idx: &CudaView<'_, i32>,
    width: usize,
    out: &mut CudaViewMut<'_, T>,
) -> Result<()> {
    let op = T::KERNEL;
    let rows = idx.len();
    check(width > 0 && src.len().is_multiple_of(width), op, || {
        format!("src {} is not rows x {width}", src.len())
    })?;
    check(out.len() == rows * width, op, || format!("out {} != {rows} x {width}", out.len()))?;
    if rows == 0 {
        return Ok(());
    }
    let mut b = Launch::new(gpu, op)?;
    b.input(src).input(idx).output(out).i32(to_i32(op, "width", width)?);
    // SAFETY: shapes checked above; indices are the caller's contract.
    unsafe { b.launch(rows_cfg(rows, THREADS)) }?;
    Ok(())
}

/// Most candidates per row `topk_logprobs_into` returns (the flag's bound, spec::MAX_TOPK).
pub const MAX_TOPK: usize = 16;

/// The kernel whose per-thread list holds k: k rounded up to a power of two (1..=16).
fn topk_kernel(k: usize) -> &'static str {
    match k.next_power_of_two() {
        1 => "topk_logprobs_k1",
        2 => "topk_logprobs_k2",
        4 => "topk_logprobs_k4",
        8 => "topk_logprobs_k8",
        _ => "topk_logprobs_k16",
    }
}

/// For each row of logits [rows, vocab]: its `k` best ids, best first (ties to the lower id,
/// NaN last), into `ids` [rows, k], and their log-softmax values (NaN counting as -inf),
/// clamped to <= 0, into `lp`.
pub fn topk_logprobs_into(
    gpu: &Gpu,
    logits: &CudaView<'_, f32>,
    vocab: usize,
    k: usize,
    ids: &mut CudaViewMut<'_, i32>,
    lp: &mut CudaViewMut<'_, f32>,
) -> Result<()> {
    const OP: &str = "topk_logprobs";
    check((1..=MAX_TOPK).contains(&k) && k <= vocab, OP, || {
        format!("k = {k}: 1..={MAX_TOPK} and at most the vocabulary ({vocab})")
    })?;
    check(logits.len().is_multiple_of(vocab), OP, || format!("logits {} not rows x {vocab}", logits.len()))?;
    let rows = logits.len() / vocab;
    check(ids.len() == rows * k && lp.len() == rows * k, OP, || {
        format!("ids {} / lp {} != {rows} x {k}", ids.len(), lp.len())
    })?;
    if rows == 0 {
        return Ok(());
    }
    let mut b = Launch::new(gpu, topk_kernel(k))?;
    b.input(logits).output(ids).output(lp).i32(to_i32(OP, "vocab", vocab)?).i32(k as i32);
    // SAFETY: shapes checked above.
    unsafe { b.launch(rows_cfg(rows, 512)) }?;
    Ok(())
}
