//! The EAGLE-3 draft layer over fixed device buffers (`LayerBufs`): the CPU reference's
//! midlayer (spec/draft/forward.rs) on the target's ops and eagle3.cu's. Nothing here
//! allocates, so a tree level's call can be captured in a CUDA graph (draft.rs).

use super::prefill_copy::keep_copy;
use super::step::{gate_up_swiglu, linear_w};
use super::weights::{GpuLinear, upload_f32, upload_gate_up, upload_linear};
use super::{driver_err, kernel_err};
use crate::error::Result;
use crate::spec::draft::config::DraftConfig;
use kernels::cudarc::driver::{CudaSlice, CudaStream, CudaView, DeviceRepr, ValidAsZeroBits};
use kernels::ops::{self, AttnDims, Eagle3Norms, PagedAttnArgs};
use kernels::{Gpu, bf16};
use std::sync::Arc;

/// The draft's weights on the GPU in the target's format (weights.rs): bf16 (tiled beside
/// row-major where the tuning says) or, for an FP8 target, FP8 with bf16 prefill copies;
/// q|k|v fused, gate|up fused (interleaved by 8 where the size allows); f32 norms.
pub(super) struct DraftWeights {
    pub fc: GpuLinear,
    pub input_norm: CudaSlice<f32>,
    pub hidden_norm: CudaSlice<f32>,
    pub wqkv: GpuLinear,
    pub wo: GpuLinear,
    pub post_norm: CudaSlice<f32>,
    pub wgu: GpuLinear,
    pub gu_interleaved: bool,
    pub wdown: GpuLinear,
    pub final_norm: CudaSlice<f32>,
    pub lm_head: GpuLinear,
}

pub(super) fn zeros<T: DeviceRepr + ValidAsZeroBits>(gpu: &Gpu, n: usize) -> Result<CudaSlice<T>> {
    gpu.stream().alloc_zeros::<T>(n).map_err(driver_err("alloc draft buffer"))
}

impl DraftWeights {
    /// `w` (already FP8 where the target is: `Eagle3Draft::quantize_fp8`) on the GPU.
    pub fn upload(gpu: &Gpu, c: &DraftConfig, w: &crate::spec::draft::weights::DraftWeights) -> Result<Self> {
        let (h, inter, qd, kvd) = (c.hidden_size, c.intermediate_size, c.q_dim(), c.kv_dim());
        let (wgu, gu_interleaved) = upload_gate_up(gpu, "draft gate_up", &w.gate_proj, &w.up_proj)?;
        let mut d = DraftWeights {
            fc: upload_linear(gpu, "draft fc", &[&w.fc])?,
            input_norm: upload_f32(gpu, "draft input_norm", &w.input_norm)?,
            hidden_norm: upload_f32(gpu, "draft hidden_norm", &w.hidden_norm)?,
            wqkv: upload_linear(gpu, "draft qkv", &[&w.q_proj, &w.k_proj, &w.v_proj])?,
            wo: upload_linear(gpu, "draft o_proj", &[&w.o_proj])?,
            post_norm: upload_f32(gpu, "draft post_norm", &w.post_norm)?,
            wgu,
            gu_interleaved,
            wdown: upload_linear(gpu, "draft down_proj", &[&w.down_proj])?,
            final_norm: upload_f32(gpu, "draft norm", &w.final_norm)?,
            lm_head: upload_linear(gpu, "draft lm_head", &[&w.lm_head])?,
        };
        let shapes = [
            (&mut d.fc, h, w.fc.cols),
            (&mut d.wqkv, qd + 2 * kvd, 2 * h),
            (&mut d.wo, h, qd),
            (&mut d.wgu, 2 * inter, h),
            (&mut d.wdown, h, inter),
        ];
        for (lin, n, k) in shapes {
            keep_copy(gpu, lin, n, k)?;
        }
        Ok(d)
    }

    /// Bytes on the device.
    pub fn bytes(&self) -> usize {
        [&self.fc, &self.wqkv, &self.wo, &self.wgu, &self.wdown, &self.lm_head]
            .iter()
            .map(|m| m.bytes())
            .sum()
    }
}

/// One layer call's per-row inputs on the host: token, RoPE position, KV slot, the row's
/// table offset, its context length and its tree ints (lo, mask_lo, mask_hi).
#[derive(Default)]
pub(super) struct LayerRows {
    pub ids: Vec<u32>,
    positions: Vec<i32>,
    slots: Vec<i32>,
    offs: Vec<i32>,
    ctx: Vec<i32>,
    tree: Vec<i32>,
}

impl LayerRows {
    /// A row whose KV goes to `slot`, at RoPE position `pos`, seeing the positions below
    /// `lo` and those of the mask's bits above it, all below `ctx`.
    #[allow(clippy::too_many_arguments)]
    pub fn push(&mut self, id: u32, pos: usize, slot: usize, off: usize, lo: usize, mask: u64, ctx: usize) {
        self.ids.push(id);
        self.positions.push(pos as i32);
        self.slots.push(slot as i32);
        self.offs.push(off as i32);
        self.ctx.push(ctx as i32);
        self.tree.extend([lo as i32, mask as u32 as i32, (mask >> 32) as u32 as i32]);
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// KV slots, row after row.
    pub fn slots(&self) -> &[i32] {
        &self.slots
    }

    /// positions, slots, table offsets, context lengths, tree ints: `LayerBufs::meta`.
    fn packed(&self) -> Vec<i32> {
        [&self.positions, &self.slots, &self.offs, &self.ctx, &self.tree]
            .into_iter()
            .flatten()
            .copied()
            .collect()
    }
}

/// A layer call's inputs and activations for `rows` inputs.
pub(super) struct LayerBufs {
    ids: CudaSlice<u32>,
    /// `LayerRows::packed`: one upload per call.
    meta: CudaSlice<i32>,
    /// The hidden inputs, f32 [rows, hidden]; the output hidden states (before `norm`)
    /// after the call.
    pub x: CudaSlice<f32>,
    xcat: CudaSlice<bf16>,
    qkv: CudaSlice<f32>,
    q: CudaSlice<bf16>,
    attn: CudaSlice<bf16>,
    o: CudaSlice<f32>,
    /// The output after `norm`, bf16: what lm_head reads.
    pub normed: CudaSlice<bf16>,
    gu: CudaSlice<f32>,
    act: CudaSlice<bf16>,
    /// The tree attention's context splits and their partial states.
    splits: usize,
    part_acc: CudaSlice<f32>,
    part_ml: CudaSlice<f32>,
}

impl LayerBufs {
    pub fn new(gpu: &Gpu, c: &DraftConfig, rows: usize) -> Result<Self> {
        let (h, inter, qd, kvd) = (c.hidden_size, c.intermediate_size, c.q_dim(), c.kv_dim());
        let splits = ops::tree_attention_splits(gpu, rows, c.num_key_value_heads);
        let (na, nm) = match splits {
            1 => (1, 1),
            s => ops::attention_partials_len(rows, dims(c), s),
        };
        Ok(LayerBufs {
            splits,
            part_acc: zeros(gpu, na)?,
            part_ml: zeros(gpu, nm)?,
            ids: zeros(gpu, rows)?,
            meta: zeros(gpu, 7 * rows)?,
            x: zeros(gpu, rows * h)?,
            xcat: zeros(gpu, rows * 2 * h)?,
            qkv: zeros(gpu, rows * (qd + 2 * kvd))?,
            q: zeros(gpu, rows * qd)?,
            attn: zeros(gpu, rows * qd)?,
            o: zeros(gpu, rows * h)?,
            normed: zeros(gpu, rows * h)?,
            gu: zeros(gpu, rows * 2 * inter)?,
            act: zeros(gpu, rows * inter)?,
        })
    }

    pub fn rows(&self) -> usize {
        self.ids.len()
    }

    /// Upload `r`'s inputs (as many rows as these buffers hold).
    pub fn write(&mut self, s: &Arc<CudaStream>, r: &LayerRows) -> Result<()> {
        debug_assert_eq!(r.len(), self.rows());
        s.memcpy_htod(&r.ids, &mut self.ids).map_err(driver_err("upload draft tokens"))?;
        s.memcpy_htod(&r.packed(), &mut self.meta).map_err(driver_err("upload draft layer inputs"))
    }
}

/// Parts i..i + n of `meta` (`LayerRows::packed`) for `rows` inputs.
fn part(meta: &CudaSlice<i32>, rows: usize, i: usize, n: usize) -> CudaView<'_, i32> {
    meta.slice(i * rows..(i + n) * rows)
}

/// What every layer call reads: the weights, the geometry and the draft's KV store.
pub(super) struct Layer<'a> {
    pub c: &'a DraftConfig,
    pub w: &'a DraftWeights,
    pub k: &'a mut CudaSlice<bf16>,
    pub v: &'a mut CudaSlice<bf16>,
    pub block_size: usize,
}

pub(super) fn dims(c: &DraftConfig) -> AttnDims {
    AttnDims { heads: c.num_attention_heads, kv_heads: c.num_key_value_heads, head_dim: c.head_dim }
}

impl Layer<'_> {
    /// The midlayer over `b` (inputs uploaded, hidden inputs in `b.x`): the two-norm input,
    /// q|k|v, RoPE and the KV write, tree attention over `tables`, o_proj and the residual,
    /// the post norm and the MLP and the residual again (the output hidden in `b.x`), then
    /// `norm` into `b.normed`.
    pub fn run(
        &mut self,
        gpu: &Gpu,
        embed: &CudaSlice<bf16>,
        b: &mut LayerBufs,
        tables: &CudaView<'_, i32>,
    ) -> Result<()> {
        let (c, dims) = (self.c, dims(self.c));
        let (h, inter, eps) = (c.hidden_size, c.intermediate_size, c.rms_norm_eps as f32);
        let (qd, kvd, rows) = (dims.q_dim(), dims.kv_dim(), b.rows());
        let ke = kernel_err;
        let norms = Eagle3Norms {
            input_norm: &self.w.input_norm.as_view(),
            hidden_norm: &self.w.hidden_norm.as_view(),
            eps,
            norm_residual: c.norm_before_residual,
        };
        ops::eagle3_input_into(
            gpu,
            &b.ids.as_view(),
            &embed.as_view(),
            &norms,
            &mut b.x.as_view_mut(),
            &mut b.xcat.as_view_mut(),
        )
        .map_err(ke)?;
        linear_w(gpu, &b.xcat, &self.w.wqkv, qd + 2 * kvd, 2 * h, &mut b.qkv, None)?;
        {
            let (pos, slots) = (part(&b.meta, rows, 0, 1), part(&b.meta, rows, 1, 1));
            let (mut kc, mut vc) = (self.k.as_view_mut(), self.v.as_view_mut());
            let theta = c.rope_theta as f32;
            ops::rope_kv_into(
                gpu,
                dims,
                &b.qkv.as_view(),
                (&pos, &slots),
                theta,
                &mut b.q.as_view_mut(),
                (&mut kc, &mut vc),
            )
            .map_err(ke)?;
        }
        {
            let pa = PagedAttnArgs {
                q: &b.q.as_view(),
                k_cache: &self.k.as_view(),
                v_cache: &self.v.as_view(),
                tables,
                table_offs: &part(&b.meta, rows, 2, 1),
                ctx_lens: &part(&b.meta, rows, 3, 1),
                block_size: self.block_size,
                settled: false,
            };
            let mut split = ops::SplitScratch { acc: b.part_acc.as_view_mut(), ml: b.part_ml.as_view_mut() };
            let tree = part(&b.meta, rows, 4, 3);
            ops::tree_attention_into(
                gpu,
                dims,
                &pa,
                &tree,
                (b.splits, &mut split),
                &mut b.attn.as_view_mut(),
            )
            .map_err(ke)?;
        }
        linear_w(gpu, &b.attn, &self.w.wo, h, qd, &mut b.o, None)?;
        let post = self.w.post_norm.as_view();
        ops::add_rmsnorm_into(
            gpu,
            &mut b.x.as_view_mut(),
            &b.o.as_view(),
            &post,
            eps,
            &mut b.normed.as_view_mut(),
        )
        .map_err(ke)?;
        let gu = (&self.w.wgu, self.w.gu_interleaved);
        gate_up_swiglu(gpu, gu, (inter, h), &b.normed, (&mut b.gu, &mut b.act), None)?;
        linear_w(gpu, &b.act, &self.w.wdown, h, inter, &mut b.o, None)?;
        let fin = self.w.final_norm.as_view();
        ops::add_rmsnorm_into(
            gpu,
            &mut b.x.as_view_mut(),
            &b.o.as_view(),
            &fin,
            eps,
            &mut b.normed.as_view_mut(),
        )
        .map_err(ke)
    }
}
