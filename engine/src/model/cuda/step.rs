//! One forward step on the GPU: embedding -> layers -> final norm over a `Scratch` of
//! activation buffers, then lm_head for the rows that want logits. Linear layers of up to
//! 8 rows (decode) run on our tensor-core skinny GEMM, larger ones (prefill) through
//! cuBLAS. Only kernel launches happen between upload and download, so a decode step can
//! be captured in a CUDA graph (graph.rs).

use super::meta::{HostMeta, StepMeta};
use super::weights::{GpuLayer, GpuLinear, GpuWeights};
use super::{CudaBackend, GpuKvCache, driver_err, kernel_err};
use crate::config::ModelConfig;
use crate::error::Result;
use crate::model::{Next, RowHint, SeqChunk};
use kernels::Gpu;
use kernels::bf16;
use kernels::cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use kernels::ops::{self, AttnDims, PagedAttnArgs, RopeKvArgs, SKINNY_MAX_ROWS};

mod fold;
mod half_x;
mod scratch;

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
    AttnDims {
        heads: c.num_attention_heads,
        kv_heads: c.num_key_value_heads,
        head_dim: c.head_dim,
    }
}

/// y[rows, n] = x[rows, k] w^T: the skinny GEMM up to 8 rows (it streams the weights once
/// for all rows, where cuBLAS reached ~1.9 TB/s on the small decode shapes), cuBLAS above
/// when present, else the skinny GEMM in chunks of 8 rows.
pub(super) fn linear(
    gpu: &Gpu,
    x: &CudaSlice<bf16>,
    w: &CudaSlice<bf16>,
    n: usize,
    k: usize,
    y: &mut CudaSlice<f32>,
) -> Result<()> {
    linear_bf16(gpu, x, (w, None), n, k, y)
}

/// logits[rows, vocab] = x lm_head^T.
pub(super) fn lm_head_into(
    gpu: &Gpu,
    x: &CudaSlice<bf16>,
    w: &GpuWeights,
    (vocab, hd): (usize, usize),
    logits: &mut CudaSlice<f32>,
) -> Result<()> {
    linear(gpu, x, w.lm_head(), vocab, hd, logits)
}

/// `linear` over a row-major matrix and, for the skinny GEMM, its tiled copy if any.
fn linear_bf16(
    gpu: &Gpu,
    x: &CudaSlice<bf16>,
    (rows_w, tiled): (&CudaSlice<bf16>, Option<&CudaSlice<bf16>>),
    n: usize,
    k: usize,
    y: &mut CudaSlice<f32>,
) -> Result<()> {
    let rows = x.len() / k;
    if rows > SKINNY_MAX_ROWS && ops::blas_available(gpu) {
        return ops::gemm_into(
            gpu,
            &x.as_view(),
            &rows_w.as_view(),
            n,
            k,
            &mut y.as_view_mut(),
        )
        .map_err(kernel_err);
    }
    let (w, layout) = decode_bf16(rows_w, tiled);
    in_row_chunks(x, y, n, k, |xs, ys| {
        ops::skinny_gemm_into(gpu, xs, &w.as_view(), layout, n, k, ys)
    })
}

/// The matrix the skinny GEMM reads: the tiled copy where there is one.
fn decode_bf16<'w>(
    rows: &'w CudaSlice<bf16>,
    tiled: Option<&'w CudaSlice<bf16>>,
) -> (&'w CudaSlice<bf16>, ops::WeightLayout) {
    match tiled {
        Some(t) => (t, ops::WeightLayout::Tiled),
        None => (rows, ops::WeightLayout::Rows),
    }
}

/// Run `f` over x and y in chunks of at most 8 rows (the skinny GEMM's limit).
fn in_row_chunks(
    x: &CudaSlice<bf16>,
    y: &mut CudaSlice<f32>,
    n: usize,
    k: usize,
    mut f: impl FnMut(&CudaView<'_, bf16>, &mut CudaViewMut<'_, f32>) -> kernels::Result<()>,
) -> Result<()> {
    let rows = x.len() / k;
    let mut r = 0;
    while r < rows {
        let m = SKINNY_MAX_ROWS.min(rows - r);
        let xs = x.slice(r * k..(r + m) * k);
        let mut ys = y.slice_mut(r * n..(r + m) * n);
        f(&xs, &mut ys).map_err(kernel_err)?;
        r += m;
    }
    Ok(())
}

/// An FP8 projection's kernel-side description.
fn fp8_matrix<'a, 'b>(
    codes: &'a CudaView<'b, u8>,
    scale_inv: &'a CudaView<'b, f32>,
    (scale_rows, interleave): (usize, usize),
    n: usize,
    k: usize,
) -> ops::Fp8Matrix<'a, 'b> {
    ops::Fp8Matrix {
        codes,
        scale_inv,
        scale_rows,
        n,
        k,
        interleave,
    }
}

/// `linear` for a layer projection, bf16 or FP8. FP8 runs the dequantizing skinny GEMM up
/// to 8 rows (decode); above (prefill) it runs cuBLAS on the kept bf16 copy, or expands the
/// matrix into `deq` first,
/// which measured faster than 8-row passes over the codes (cuBLASLt FP8 buys nothing at
/// small M, and prefill's M is large enough for bf16 tensor cores: engine/PERF.md).
pub(super) fn linear_w(
    gpu: &Gpu,
    x: &CudaSlice<bf16>,
    w: &GpuLinear,
    n: usize,
    k: usize,
    y: &mut CudaSlice<f32>,
    deq: Option<&mut CudaSlice<bf16>>,
) -> Result<()> {
    let (codes, scale_inv, how, prefill) = match w {
        GpuLinear::Bf16 { rows, tiled } => {
            return linear_bf16(gpu, x, (rows, tiled.as_ref()), n, k, y);
        }
        GpuLinear::Fp8 {
            codes,
            scale_inv,
            scale_rows,
            interleave,
            prefill,
        } => (codes, scale_inv, (*scale_rows, *interleave), prefill),
    };
    let (cv, sv) = (codes.as_view(), scale_inv.as_view());
    let m8 = fp8_matrix(&cv, &sv, how, n, k);
    let rows = x.len() / k;
    if rows > SKINNY_MAX_ROWS && ops::blas_available(gpu) {
        // The kept bf16 copy (made by the same dequantization), else a fresh one.
        if let Some(wb) = prefill {
            return linear(gpu, x, wb, n, k, y);
        }
        if let Some(buf) = deq {
            ops::fp8_dequant_into(gpu, &m8, &mut buf.slice_mut(..n * k)).map_err(kernel_err)?;
            let wv = buf.slice(..n * k);
            return ops::gemm_into(gpu, &x.as_view(), &wv, n, k, &mut y.as_view_mut())
                .map_err(kernel_err);
        }
    }
    in_row_chunks(x, y, n, k, |xs, ys| {
        ops::skinny_gemm_fp8_into(gpu, xs, &m8, ys)
    })
}

/// The MLP's first half: act = SwiGLU(x · gate|up). Decode (up to 8 rows) over interleaved
/// weights runs it as one kernel; otherwise the GEMM writes `gu` and the swiglu kernel
/// reads it (in the weights' layout).
/// Reads `sc.h`, writes `sc.act` (and `sc.gu` on the unfused path).
fn gate_up_act(
    gpu: &Gpu,
    lw: &GpuLayer,
    inter: usize,
    k: usize,
    sc: &mut Scratch,
    deq: Option<&mut CudaSlice<bf16>>,
) -> Result<()> {
    let Scratch {
        h: x,
        gu: sc_gu,
        act,
        ..
    } = sc;
    let rows = x.len() / k;
    if lw.gu_tiled && rows <= SKINNY_MAX_ROWS {
        return swiglu_decode(gpu, &lw.wgu, (inter, k), (x, act));
    }
    linear_w(gpu, x, &lw.wgu, 2 * inter, k, sc_gu, deq)?;
    ops::swiglu_into(
        gpu,
        &sc_gu.as_view(),
        inter,
        lw.gu_tiled,
        &mut act.as_view_mut(),
    )
    .map_err(kernel_err)
}

/// The decode MLP's first half in one kernel over interleaved gate|up weights: act =
/// SwiGLU(x · gate|up).
fn swiglu_decode(
    gpu: &Gpu,
    w: &GpuLinear,
    (inter, k): (usize, usize),
    (x, act): (&CudaSlice<bf16>, &mut CudaSlice<bf16>),
) -> Result<()> {
    let (xv, mut av) = (x.as_view(), act.as_view_mut());
    match w {
        GpuLinear::Bf16 { rows, tiled } => {
            let (m, layout) = decode_bf16(rows, tiled.as_ref());
            ops::skinny_gemm_swiglu_into(gpu, &xv, &m.as_view(), layout, inter, k, &mut av)
                .map_err(kernel_err)
        }
        GpuLinear::Fp8 { .. } => fold::with_fp8(w, (2 * inter, k), |m8| {
            ops::skinny_gemm_fp8_swiglu_into(gpu, &xv, m8, &mut av)
        }),
    }
}

/// Attention of the step's rows into `out`: the tensor-core prefill kernel for more rows
/// than a decode batch where the geometry fits, else the split-context kernel with
/// `splits` and its partials.
fn attention(
    gpu: &Gpu,
    dims: AttnDims,
    pa: &PagedAttnArgs<'_, '_>,
    splits: usize,
    scratch: &mut ops::SplitScratch<'_>,
    out: &mut CudaSlice<bf16>,
) -> kernels::Result<()> {
    let rows = pa.ctx_lens.len();
    if rows > SKINNY_MAX_ROWS && ops::prefill_attention_supported(dims) {
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
    let (hd, inter) = (c.hidden_size, c.intermediate_size);
    let dims = attn_dims(c);
    let (qd, kvd) = (dims.q_dim(), dims.kv_dim());
    let (eps, theta) = (c.rms_norm_eps as f32, c.rope_theta as f32);
    let ke = kernel_err;
    ops::embed_gather_into(
        gpu,
        &meta.ids(),
        &w.embed.as_view(),
        hd,
        &mut sc.x.as_view_mut(),
    )
    .map_err(ke)?;
    let fold = fold::folds_norms(w, meta.ids().len(), hd);
    let xh = half_x::uses_f16_x(w, meta.ids().len(), hd, fold);
    for (li, lw) in w.layers.iter().enumerate() {
        // The previous layer's MLP output (in `o`) joins the residual here, fused with this
        // layer's input norm; with folded norms, the previous down did both (`h` holds its
        // hw, `ss` its sums of squares).
        let folded_in = fold && li > 0;
        if xh {
            // f16 into `h16` for the FP8 GEMMs (half_x.rs).
            half_x::norm(gpu, sc, li > 0, &lw.input_norm, eps)?;
        } else {
            if li == 0 {
                ops::rmsnorm_into(
                    gpu,
                    &mut sc.x.as_view_mut(),
                    &lw.input_norm.as_view(),
                    eps,
                    &mut sc.h.as_view_mut(),
                )
            } else if !folded_in {
                ops::add_rmsnorm_into(
                    gpu,
                    &mut sc.x.as_view_mut(),
                    &sc.o.as_view(),
                    &lw.input_norm.as_view(),
                    eps,
                    &mut sc.h.as_view_mut(),
                )
            } else {
                Ok(())
            }
            .map_err(ke)?;
        }
        if folded_in {
            fold::qkv(gpu, lw, (qd + 2 * kvd, hd), eps, sc)?;
        } else if xh {
            half_x::qkv(gpu, lw, (qd + 2 * kvd, hd), sc)?;
        } else {
            linear_w(
                gpu,
                &sc.h,
                &lw.wqkv,
                qd + 2 * kvd,
                hd,
                &mut sc.qkv,
                deq.as_deref_mut(),
            )?;
        }
        let rope = RopeKvArgs {
            qkv: &sc.qkv.as_view(),
            q_norm: &lw.q_norm.as_view(),
            k_norm: &lw.k_norm.as_view(),
            positions: &meta.positions(),
            slots: &meta.slots(),
            theta,
            eps,
        };
        let (kc, vc) = (&mut cache.k[li], &mut cache.v[li]);
        ops::qk_norm_rope_kv_into(
            gpu,
            dims,
            &rope,
            &mut sc.q.as_view_mut(),
            &mut kc.as_view_mut(),
            &mut vc.as_view_mut(),
        )
        .map_err(ke)?;
        let pa = PagedAttnArgs {
            q: &sc.q.as_view(),
            k_cache: &kc.as_view(),
            v_cache: &vc.as_view(),
            tables: &meta.tables(),
            table_offs: &meta.table_offs(),
            ctx_lens: &meta.ctx_lens(),
            block_size: cache.block_size,
            settled,
        };
        attention(
            gpu,
            dims,
            &pa,
            sc.attn_splits,
            &mut ops::SplitScratch {
                acc: sc.part_acc.as_view_mut(),
                ml: sc.part_ml.as_view_mut(),
            },
            &mut sc.attn,
        )
        .map_err(ke)?;
        if fold {
            fold::after_attention(gpu, w, li, (hd, qd, inter), eps, sc)?;
            continue;
        }
        linear_w(gpu, &sc.attn, &lw.wo, hd, qd, &mut sc.o, deq.as_deref_mut())?;
        if xh {
            half_x::mlp(gpu, lw, (hd, inter), eps, sc)?;
            continue;
        }
        ops::add_rmsnorm_into(
            gpu,
            &mut sc.x.as_view_mut(),
            &sc.o.as_view(),
            &lw.post_norm.as_view(),
            eps,
            &mut sc.h.as_view_mut(),
        )
        .map_err(ke)?;
        gate_up_act(gpu, lw, inter, hd, sc, deq.as_deref_mut())?;
        linear_w(
            gpu,
            &sc.act,
            &lw.wdown,
            hd,
            inter,
            &mut sc.o,
            deq.as_deref_mut(),
        )?;
    }
    ops::add_rmsnorm_into(
        gpu,
        &mut sc.x.as_view_mut(),
        &sc.o.as_view(),
        &w.final_norm.as_view(),
        eps,
        &mut sc.h.as_view_mut(),
    )
    .map_err(ke)
}

impl CudaBackend {
    /// Forward all chunks' tokens; return logits for the flat token indices in `rows`, or
    /// their greedy tokens when `all.greedy` (a graph step may queue the next: graph.rs).
    pub(super) fn run(
        &mut self,
        chunks: &[SeqChunk<'_>],
        rows: &[usize],
        all: RowHint,
    ) -> Result<Vec<Next>> {
        let host = HostMeta::build(
            chunks,
            self.cfg.vocab_size,
            self.cache.block_size,
            self.cache.num_pages,
        )?;
        let t = host.ids.len();
        if t == 0 {
            return Ok(vec![]);
        }
        // One token per sequence: the cache before each token is settled.
        let settled = chunks.iter().all(|c| c.tokens.len() == 1);
        // Pure decode (one token per sequence, each wanting logits) replays a graph.
        if self.graphs_enabled && settled && rows.len() == t && t <= SKINNY_MAX_ROWS {
            return self.decode_with_graph(host, all);
        }
        self.ahead = None; // a step queued ahead (graph.rs) runs first; it is not this one
        let (hd, vocab) = (self.cfg.hidden_size, self.cfg.vocab_size);
        let s = self.gpu.stream().clone();
        let meta = StepMeta::upload(&s, &host)?;
        let mut sc = Scratch::new(&self.gpu, &self.cfg, t)?;
        forward_layers(
            &self.gpu,
            &self.cfg,
            &self.w,
            &mut self.cache,
            &mut sc,
            &meta,
            self.deq.as_mut(),
            settled,
        )?;
        if rows.is_empty() {
            self.gpu.sync().map_err(kernel_err)?;
            return Ok(vec![]);
        }
        let a = driver_err("alloc logits");
        let mut hsel = s.alloc_zeros::<bf16>(rows.len() * hd).map_err(&a)?;
        for (i, &r) in rows.iter().enumerate() {
            s.memcpy_dtod(
                &sc.h.slice(r * hd..(r + 1) * hd),
                &mut hsel.slice_mut(i * hd..(i + 1) * hd),
            )
            .map_err(driver_err("gather rows"))?;
        }
        let mut logits = s.alloc_zeros::<f32>(rows.len() * vocab).map_err(&a)?;
        lm_head_into(&self.gpu, &hsel, &self.w, (vocab, hd), &mut logits)?;
        if all.greedy {
            let mut tokens = s.alloc_zeros::<u32>(rows.len()).map_err(&a)?;
            let mut keys = s
                .alloc_zeros::<u64>(rows.len() * ops::ARGMAX_PARTS)
                .map_err(&a)?;
            ops::argmax_into(
                &self.gpu,
                &logits.as_view(),
                vocab,
                &mut keys.as_view_mut(),
                &mut tokens.as_view_mut(),
            )
            .map_err(kernel_err)?;
            let host = s
                .clone_dtoh(&tokens)
                .map_err(driver_err("download tokens"))?;
            self.gpu.sync().map_err(kernel_err)?;
            return Ok(host.into_iter().map(Next::Token).collect());
        }
        let host = s
            .clone_dtoh(&logits)
            .map_err(driver_err("download logits"))?;
        self.gpu.sync().map_err(kernel_err)?;
        Ok(host
            .chunks_exact(vocab)
            .map(|r| Next::Logits(r.to_vec()))
            .collect())
    }
}
