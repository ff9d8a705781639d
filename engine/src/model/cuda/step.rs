//! One forward step on the GPU: embedding -> layers -> final norm over a `Scratch` of
//! activation buffers, then lm_head for the rows that want logits. Linear layers of up to
//! 8 rows run on our tensor-core skinny GEMM, larger ones (prefill, decode batches past 8)
//! through cuBLAS. Only kernel launches happen between upload and download, so a decode step can
//! be captured in a CUDA graph (graph.rs).

use super::meta::{HostMeta, StepMeta};
use super::weights::{GpuLayer, GpuWeights};
use super::{CudaBackend, GpuKvCache, driver_err, graph, kernel_err};
use crate::config::ModelConfig;
use crate::error::Result;
use crate::model::{Next, RowHint, SeqChunk};
use kernels::Gpu;
use kernels::bf16;
use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, AttnDims, PagedAttnArgs, RopeKvArgs, SKINNY_MAX_ROWS};

mod fold;
mod half_x;
mod linear;
mod scratch;

use linear::gate_up_act;
pub(super) use linear::{gate_up_swiglu, linear_w, lm_head_into};
pub(super) use scratch::Scratch;

pub(super) use fold::folds_norms;
pub(super) use half_x::uses_f16_x;

/// Which forms a decode step of some batch size runs (`CudaBackend::decode_path`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodePath {
    /// The inner norms folded into the FP8 GEMMs (fold.rs: FP8 weights, one row).
    pub folds_norms: bool,
    /// The FP8 GEMMs on f16 x (half_x.rs: FP8 weights, 2-8 rows).
    pub f16_x: bool,
}

pub(super) fn attn_dims(c: &ModelConfig) -> AttnDims {
    AttnDims { heads: c.num_attention_heads, kv_heads: c.num_key_value_heads, head_dim: c.head_dim }
}

/// Attention of the step's rows into `out`: the tensor-core prefill kernel for a step with
/// a prompt's chunk of more rows than a decode batch where the geometry fits, else (decode,
/// one token per sequence, at any batch size) the split-context kernel with `splits` and
/// its partials: the prefill kernel's query tiles would be one row full.
fn attention(
    gpu: &Gpu,
    dims: AttnDims,
    pa: &PagedAttnArgs<'_, '_>,
    splits: usize,
    scratch: &mut ops::SplitScratch<'_>,
    out: &mut CudaSlice<bf16>,
) -> kernels::Result<()> {
    let rows = pa.ctx_lens.len();
    if rows > SKINNY_MAX_ROWS && !pa.settled && ops::prefill_attention_supported(dims) {
        return ops::prefill_attention_into(gpu, dims, pa, &mut out.as_view_mut());
    }
    ops::decode_attention_into(gpu, dims, pa, splits, scratch, &mut out.as_view_mut())
}

/// Every layer for the step's tokens; leaves the final-normed hidden states in `sc.h`.
/// `deq` is the FP8 prefill buffer (None in decode graphs, which never need it).
/// `settled`: every sequence has one token in the step, so the cache positions before it
/// were written by earlier steps (`PagedAttnArgs::settled`).
#[allow(clippy::too_many_arguments)]
pub(super) fn forward_layers(
    gpu: &Gpu,
    c: &ModelConfig,
    w: &GpuWeights,
    cache: &mut GpuKvCache,
    sc: &mut Scratch,
    meta: &StepMeta,
    mut deq: Option<&mut CudaSlice<bf16>>,
    settled: bool,
) -> Result<()> {
    let f = Forward::new(gpu, c, w, meta, settled);
    // 1. The embedding rows start the f32 residual stream `x`.
    let (ids, table) = (meta.ids(), w.embed.as_view());
    ops::embed_gather_into(gpu, &ids, &table, f.hd, &mut sc.x.as_view_mut()).map_err(kernel_err)?;
    for (li, lw) in w.layers.iter().enumerate() {
        // 2. The input norm and q|k|v; `x` is now the layer's input, which a draft may read.
        f.qkv(li, lw, sc, deq.as_deref_mut())?;
        if let Some(aux) = cache.aux.as_mut() {
            aux.store(gpu, li, &sc.x, &meta.slots())?;
        }
        // 3. q/k norm, RoPE and the K/V write, then attention over the pages.
        f.attend(li, lw, cache, sc)?;
        // 4. o_proj, the post norm and the MLP.
        f.mlp(li, lw, sc, deq.as_deref_mut())?;
    }
    // 5. The last MLP's output joins the residual, fused with the final norm.
    {
        let (mut x, o, nw) = (sc.x.as_view_mut(), sc.o.as_view(), w.final_norm.as_view());
        ops::add_rmsnorm_into(gpu, &mut x, &o, &nw, f.eps, &mut sc.h.as_view_mut()).map_err(kernel_err)?;
    }
    match cache.aux.as_mut() {
        Some(aux) => aux.store(gpu, w.layers.len(), &sc.x, &meta.slots()),
        None => Ok(()),
    }
}

/// What every layer of one forward reads: the GPU, the weights, the step's metadata and
/// shapes, and the forms this step takes.
struct Forward<'a> {
    gpu: &'a Gpu,
    w: &'a GpuWeights,
    meta: &'a StepMeta,
    dims: AttnDims,
    hd: usize,
    inter: usize,
    eps: f32,
    theta: f32,
    settled: bool,
    /// The inner norms fold into the FP8 GEMMs (fold.rs).
    fold: bool,
    /// The FP8 GEMMs read f16 x (half_x.rs).
    xh: bool,
}

impl<'a> Forward<'a> {
    fn new(gpu: &'a Gpu, c: &ModelConfig, w: &'a GpuWeights, meta: &'a StepMeta, settled: bool) -> Self {
        let (rows, hd) = (meta.ids().len(), c.hidden_size);
        let fold = fold::folds_norms(w, rows, hd);
        Forward {
            gpu,
            w,
            meta,
            dims: attn_dims(c),
            hd,
            inter: c.intermediate_size,
            eps: c.rms_norm_eps as f32,
            theta: c.rope_theta as f32,
            settled,
            fold,
            xh: half_x::uses_f16_x(w, rows, hd, fold),
        }
    }

    /// Layer `li`'s input norm into `h` (or `h16`), then q|k|v into `qkv`. The previous
    /// layer's MLP output (in `o`) joins the residual here, fused with the norm; with
    /// folded norms the previous down did both (`h` holds its hw, `ss` its sums of
    /// squares), and qkv applies the scale.
    fn qkv(
        &self,
        li: usize,
        lw: &GpuLayer,
        sc: &mut Scratch,
        deq: Option<&mut CudaSlice<bf16>>,
    ) -> Result<()> {
        let (gpu, eps, hd) = (self.gpu, self.eps, self.hd);
        let n = self.dims.q_dim() + 2 * self.dims.kv_dim();
        if self.fold && li > 0 {
            return fold::qkv(gpu, lw, (n, hd), eps, sc);
        }
        if self.xh {
            half_x::norm(gpu, sc, li > 0, &lw.input_norm, eps)?;
            return half_x::qkv(gpu, li, lw, (n, hd), sc);
        }
        {
            let (mut x, nw, mut h) = (sc.x.as_view_mut(), lw.input_norm.as_view(), sc.h.as_view_mut());
            match li {
                0 => ops::rmsnorm_into(gpu, &mut x, &nw, eps, &mut h),
                _ => ops::add_rmsnorm_into(gpu, &mut x, &sc.o.as_view(), &nw, eps, &mut h),
            }
            .map_err(kernel_err)?;
        }
        linear_w(gpu, &sc.h, &lw.wqkv, n, hd, &mut sc.qkv, deq)
    }

    /// Layer `li`'s q/k norm, RoPE and K/V write into its pages, then attention into
    /// `attn`.
    fn attend(&self, li: usize, lw: &GpuLayer, cache: &mut GpuKvCache, sc: &mut Scratch) -> Result<()> {
        let (gpu, meta, dims) = (self.gpu, self.meta, self.dims);
        let rope = RopeKvArgs {
            qkv: &sc.qkv.as_view(),
            q_norm: &lw.q_norm.as_view(),
            k_norm: &lw.k_norm.as_view(),
            positions: &meta.positions(),
            slots: &meta.slots(),
            theta: self.theta,
            eps: self.eps,
        };
        let (kc, vc) = (&mut cache.k[li], &mut cache.v[li]);
        let (mut q, mut kv, mut vv) = (sc.q.as_view_mut(), kc.as_view_mut(), vc.as_view_mut());
        ops::qk_norm_rope_kv_into(gpu, dims, &rope, &mut q, &mut kv, &mut vv).map_err(kernel_err)?;
        let pa = PagedAttnArgs {
            q: &sc.q.as_view(),
            k_cache: &kc.as_view(),
            v_cache: &vc.as_view(),
            tables: &meta.tables(),
            table_offs: &meta.table_offs(),
            ctx_lens: &meta.ctx_lens(),
            block_size: cache.block_size,
            settled: self.settled,
        };
        let mut split = ops::SplitScratch { acc: sc.part_acc.as_view_mut(), ml: sc.part_ml.as_view_mut() };
        if let Some(tree) = meta.tree() {
            let mut out = sc.attn.as_view_mut();
            return ops::tree_attention_into(gpu, dims, &pa, &tree, (sc.tree_splits, &mut split), &mut out)
                .map_err(kernel_err);
        }
        attention(gpu, dims, &pa, sc.attn_splits, &mut split, &mut sc.attn).map_err(kernel_err)
    }

    /// Layer `li` after its attention: o_proj into `o`, which joins the residual fused with
    /// the post norm; gate|up with SwiGLU, and down into `o` (or, folded, fold.rs's forms).
    fn mlp(
        &self,
        li: usize,
        lw: &GpuLayer,
        sc: &mut Scratch,
        mut deq: Option<&mut CudaSlice<bf16>>,
    ) -> Result<()> {
        let (gpu, eps, hd, inter) = (self.gpu, self.eps, self.hd, self.inter);
        let qd = self.dims.q_dim();
        if self.fold {
            return fold::after_attention(gpu, self.w, li, (hd, qd, inter), eps, sc);
        }
        if self.xh {
            half_x::o_proj(gpu, lw, (hd, qd), sc, deq)?;
            return half_x::mlp(gpu, lw, (hd, inter), eps, sc);
        }
        linear_w(gpu, &sc.attn, &lw.wo, hd, qd, &mut sc.o, deq.as_deref_mut())?;
        {
            let (mut x, o, nw) = (sc.x.as_view_mut(), sc.o.as_view(), lw.post_norm.as_view());
            ops::add_rmsnorm_into(gpu, &mut x, &o, &nw, eps, &mut sc.h.as_view_mut()).map_err(kernel_err)?;
        }
        gate_up_act(gpu, lw, inter, hd, sc, deq.as_deref_mut())?;
        linear_w(gpu, &sc.act, &lw.wdown, hd, inter, &mut sc.o, deq)
    }
}

impl CudaBackend {
    /// Forward all chunks' tokens; return logits for the flat token indices in `rows`, or
    /// their greedy tokens when `all.greedy` (a graph step may queue the next: graph.rs).
    pub(super) fn run(&mut self, chunks: &[SeqChunk<'_>], rows: &[usize], all: RowHint) -> Result<Vec<Next>> {
        let (vocab, pages) = (self.cfg.vocab_size, self.cache.num_pages);
        let host = HostMeta::build(chunks, vocab, self.cache.block_size, pages)?;
        let t = host.ids.len();
        if t == 0 {
            return Ok(vec![]);
        }
        // One token per sequence: the cache before each token is settled.
        let settled = chunks.iter().all(|c| c.tokens.len() == 1);
        // Pure decode (one token per sequence, each wanting logits) replays a graph.
        if self.graphs_enabled && settled && rows.len() == t && t <= graph::MAX_GRAPH_ROWS {
            return self.decode_with_graph(host, all);
        }
        self.ahead = None; // a step queued ahead (graph.rs) runs first; it is not this one
        let meta = StepMeta::upload(self.gpu.stream(), &host)?;
        let mut sc = Scratch::new(&self.gpu, &self.cfg, t)?;
        let (gpu, cfg, w) = (&self.gpu, &self.cfg, &self.w);
        forward_layers(gpu, cfg, w, &mut self.cache, &mut sc, &meta, self.deq.as_mut(), settled)?;
        if rows.is_empty() {
            self.gpu.sync().map_err(kernel_err)?;
            return Ok(vec![]);
        }
        let logits = self.logits_of(&sc.h, rows)?;
        self.eager_results(&logits, rows.len(), all.greedy)
    }

    /// logits [rows, vocab] of the hidden states `h` at the flat token indices `rows`.
    pub(super) fn logits_of(&self, h: &CudaSlice<bf16>, rows: &[usize]) -> Result<CudaSlice<f32>> {
        let (hd, vocab) = (self.cfg.hidden_size, self.cfg.vocab_size);
        let s = self.gpu.stream();
        let a = driver_err("alloc logits");
        let mut hsel = s.alloc_zeros::<bf16>(rows.len() * hd).map_err(&a)?;
        for (i, &r) in rows.iter().enumerate() {
            s.memcpy_dtod(&h.slice(r * hd..(r + 1) * hd), &mut hsel.slice_mut(i * hd..(i + 1) * hd))
                .map_err(driver_err("gather rows"))?;
        }
        let mut logits = s.alloc_zeros::<f32>(rows.len() * vocab).map_err(&a)?;
        lm_head_into(&self.gpu, &hsel, &self.w, (vocab, hd), &mut logits)?;
        Ok(logits)
    }

    /// The results of `n` rows of logits: their greedy tokens (argmax on the GPU), or the
    /// logits themselves.
    pub(super) fn eager_results(&self, logits: &CudaSlice<f32>, n: usize, greedy: bool) -> Result<Vec<Next>> {
        let (s, vocab) = (self.gpu.stream(), self.cfg.vocab_size);
        if greedy {
            let a = driver_err("alloc tokens");
            let mut tokens = s.alloc_zeros::<u32>(n).map_err(&a)?;
            let mut keys = s.alloc_zeros::<u64>(n * ops::ARGMAX_PARTS).map_err(&a)?;
            let (lv, mut kv, mut tv) = (logits.as_view(), keys.as_view_mut(), tokens.as_view_mut());
            ops::argmax_into(&self.gpu, &lv, vocab, &mut kv, &mut tv).map_err(kernel_err)?;
            let host = s.clone_dtoh(&tokens).map_err(driver_err("download tokens"))?;
            self.gpu.sync().map_err(kernel_err)?;
            return Ok(host.into_iter().map(Next::Token).collect());
        }
        let host = s.clone_dtoh(logits).map_err(driver_err("download logits"))?;
        self.gpu.sync().map_err(kernel_err)?;
        Ok(host.chunks_exact(vocab).map(|r| Next::Logits(r.to_vec())).collect())
    }
}
