//! One forward step on the GPU: host-side step metadata (ids, positions, KV slots, block
//! tables), then embedding -> layers -> final norm -> lm_head for the rows that want logits.
//! Linear layers run as skinny GEMMs of at most 8 rows per launch; a prefill of T tokens
//! therefore streams the weights ceil(T / 8) times (correct first; cuBLAS takes prefill
//! later). Buffers are allocated per step for now; CUDA graphs will need them fixed.

use super::{CudaBackend, driver_err, kernel_err};
use crate::error::{EngineError, Result};
use crate::model::SeqChunk;
use kernels::bf16;
use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, AttnDims, GEMV_MAX_ROWS, PagedAttnArgs, RopeKvArgs};
use kernels::Gpu;

/// Per-token metadata of a step, uploaded once and read by every layer.
struct StepMeta {
    ids: CudaSlice<u32>,
    positions: CudaSlice<i32>,
    slots: CudaSlice<i32>,
    tables: CudaSlice<i32>,
    table_offs: CudaSlice<i32>,
    ctx_lens: CudaSlice<i32>,
}

/// y[rows, n] = x[rows, k] w^T in chunks of <= 8 rows.
fn linear(gpu: &Gpu, x: &CudaSlice<bf16>, w: &CudaSlice<bf16>, n: usize, k: usize, y: &mut CudaSlice<f32>) -> Result<()> {
    let rows = x.len() / k;
    let mut r = 0;
    while r < rows {
        let m = GEMV_MAX_ROWS.min(rows - r);
        let xs = x.slice(r * k..(r + m) * k);
        let mut ys = y.slice_mut(r * n..(r + m) * n);
        ops::gemv_into(gpu, &xs, &w.as_view(), n, k, &mut ys).map_err(kernel_err)?;
        r += m;
    }
    Ok(())
}

impl CudaBackend {
    /// Check the step like the CPU backend does, then build its metadata on the host.
    fn meta(&self, chunks: &[SeqChunk<'_>]) -> Result<StepMeta> {
        let (bs, pages, vocab) = (self.cache.block_size, self.cache.num_pages, self.cfg.vocab_size);
        let (mut ids, mut positions, mut slots) = (vec![], vec![], vec![]);
        let (mut tables, mut table_offs, mut ctx_lens) = (vec![], vec![], vec![]);
        for ch in chunks {
            if let Some(&bad) = ch.tokens.iter().find(|&&t| t as usize >= vocab) {
                return Err(EngineError::BadRequest(format!("token id {bad} >= vocab_size {vocab}")));
            }
            let end = ch.start_pos + ch.tokens.len();
            if ch.block_table.len() * bs < end || ch.block_table.iter().any(|&p| p as usize >= pages) {
                return Err(EngineError::BadRequest(format!("block table does not cover {end} positions")));
            }
            let off = tables.len() as i32;
            tables.extend(ch.block_table.iter().map(|&p| p as i32));
            for (i, &t) in ch.tokens.iter().enumerate() {
                let pos = ch.start_pos + i;
                ids.push(t);
                positions.push(pos as i32);
                slots.push((ch.block_table[pos / bs] as usize * bs + pos % bs) as i32);
                table_offs.push(off);
                ctx_lens.push(pos as i32 + 1);
            }
        }
        if tables.is_empty() {
            tables.push(0); // never read; a zero-length buffer has no pointer to pass
        }
        let s = self.gpu.stream();
        let up = driver_err("upload step metadata");
        Ok(StepMeta {
            ids: s.clone_htod(&ids).map_err(&up)?,
            positions: s.clone_htod(&positions).map_err(&up)?,
            slots: s.clone_htod(&slots).map_err(&up)?,
            tables: s.clone_htod(&tables).map_err(&up)?,
            table_offs: s.clone_htod(&table_offs).map_err(&up)?,
            ctx_lens: s.clone_htod(&ctx_lens).map_err(&up)?,
        })
    }

    /// Forward all chunks' tokens; return logits for the flat token indices in `rows`.
    pub(super) fn run(&mut self, chunks: &[SeqChunk<'_>], rows: &[usize]) -> Result<Vec<Vec<f32>>> {
        let t: usize = chunks.iter().map(|c| c.tokens.len()).sum();
        if t == 0 {
            return Ok(vec![]);
        }
        let meta = self.meta(chunks)?;
        let c = &self.cfg;
        let (hd, inter, vocab) = (c.hidden_size, c.intermediate_size, c.vocab_size);
        let dims = AttnDims {
            heads: c.num_attention_heads,
            kv_heads: c.num_key_value_heads,
            head_dim: c.head_dim,
        };
        let (qd, kvd) = (dims.q_dim(), dims.kv_dim());
        let (eps, theta) = (c.rms_norm_eps as f32, c.rope_theta as f32);
        let gpu = &self.gpu;
        let s = gpu.stream();
        let alloc = driver_err("alloc step buffers");
        let mut x = s.alloc_zeros::<f32>(t * hd).map_err(&alloc)?;
        let mut h = s.alloc_zeros::<bf16>(t * hd).map_err(&alloc)?;
        let mut qkv = s.alloc_zeros::<f32>(t * (qd + 2 * kvd)).map_err(&alloc)?;
        let mut q = s.alloc_zeros::<bf16>(t * qd).map_err(&alloc)?;
        let mut attn = s.alloc_zeros::<bf16>(t * qd).map_err(&alloc)?;
        let mut o = s.alloc_zeros::<f32>(t * hd).map_err(&alloc)?;
        let mut gu = s.alloc_zeros::<f32>(t * 2 * inter).map_err(&alloc)?;
        let mut act = s.alloc_zeros::<bf16>(t * inter).map_err(&alloc)?;

        ops::embed_gather_into(gpu, &meta.ids.as_view(), &self.w.embed.as_view(), hd, &mut x.as_view_mut())
            .map_err(kernel_err)?;
        for (li, lw) in self.w.layers.iter().enumerate() {
            // The previous layer's MLP output (in `o`) joins the residual here, fused with
            // this layer's input norm.
            if li == 0 {
                ops::rmsnorm_into(gpu, &mut x.as_view_mut(), &lw.input_norm.as_view(), eps, &mut h.as_view_mut())
            } else {
                ops::add_rmsnorm_into(gpu, &mut x.as_view_mut(), &o.as_view(), &lw.input_norm.as_view(), eps, &mut h.as_view_mut())
            }
            .map_err(kernel_err)?;
            linear(gpu, &h, &lw.wqkv, qd + 2 * kvd, hd, &mut qkv)?;
            let rope = RopeKvArgs {
                qkv: &qkv.as_view(),
                q_norm: &lw.q_norm.as_view(),
                k_norm: &lw.k_norm.as_view(),
                positions: &meta.positions.as_view(),
                slots: &meta.slots.as_view(),
                theta,
                eps,
            };
            let (kc, vc) = (&mut self.cache.k[li], &mut self.cache.v[li]);
            ops::qk_norm_rope_kv_into(gpu, dims, &rope, &mut q.as_view_mut(), &mut kc.as_view_mut(), &mut vc.as_view_mut())
                .map_err(kernel_err)?;
            let pa = PagedAttnArgs {
                q: &q.as_view(),
                k_cache: &kc.as_view(),
                v_cache: &vc.as_view(),
                tables: &meta.tables.as_view(),
                table_offs: &meta.table_offs.as_view(),
                ctx_lens: &meta.ctx_lens.as_view(),
                block_size: self.cache.block_size,
            };
            ops::paged_attention_into(gpu, dims, &pa, &mut attn.as_view_mut()).map_err(kernel_err)?;
            linear(gpu, &attn, &lw.wo, hd, qd, &mut o)?;
            ops::add_rmsnorm_into(gpu, &mut x.as_view_mut(), &o.as_view(), &lw.post_norm.as_view(), eps, &mut h.as_view_mut())
                .map_err(kernel_err)?;
            linear(gpu, &h, &lw.wgu, 2 * inter, hd, &mut gu)?;
            ops::swiglu_into(gpu, &gu.as_view(), inter, &mut act.as_view_mut()).map_err(kernel_err)?;
            linear(gpu, &act, &lw.wdown, hd, inter, &mut o)?;
        }
        ops::add_rmsnorm_into(gpu, &mut x.as_view_mut(), &o.as_view(), &self.w.final_norm.as_view(), eps, &mut h.as_view_mut())
            .map_err(kernel_err)?;
        if rows.is_empty() {
            gpu.sync().map_err(kernel_err)?;
            return Ok(vec![]);
        }
        let mut hsel = s.alloc_zeros::<bf16>(rows.len() * hd).map_err(&alloc)?;
        for (i, &r) in rows.iter().enumerate() {
            s.memcpy_dtod(&h.slice(r * hd..(r + 1) * hd), &mut hsel.slice_mut(i * hd..(i + 1) * hd))
                .map_err(driver_err("gather rows"))?;
        }
        let mut logits = s.alloc_zeros::<f32>(rows.len() * vocab).map_err(&alloc)?;
        linear(gpu, &hsel, self.w.lm_head(), vocab, hd, &mut logits)?;
        let host = s.clone_dtoh(&logits).map_err(driver_err("download logits"))?;
        gpu.sync().map_err(kernel_err)?;
        Ok(host.chunks_exact(vocab).map(|r| r.to_vec()).collect())
    }
}
