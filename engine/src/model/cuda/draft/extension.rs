//! The draft's extension (draft.rs, step 1 of `propose`): its buffers per (batch,
//! positions) and the kernels a graph of that shape replays.

use super::GpuDraft;
use crate::error::Result;
use crate::model::cuda::draft_layer::{Layer, LayerBufs, zeros};
use crate::model::cuda::graph::OwnedGraph;
use crate::model::cuda::kernel_err;
use crate::model::cuda::spec::AuxStore;
use crate::model::cuda::step::linear_w;
use kernels::cudarc::driver::CudaSlice;
use kernels::ops;
use kernels::{Gpu, bf16};

/// The extension's buffers for `batch` rows extending over `rows` positions in all, and
/// its graph once captured: kept and replayed when the same shape comes again (at batch 1
/// a round extends over 1..=num_steps + 1 positions, so a handful of shapes recur).
pub(super) struct Extension {
    pub(super) shape: (usize, usize),
    pub(super) layer: LayerBufs,
    /// The aux store's slot of each position, the gathered aux rows, and each batch row's
    /// last position (whose output roots the tree).
    pub(super) aux_slots: CudaSlice<i32>,
    pub(super) aux: CudaSlice<bf16>,
    pub(super) last: CudaSlice<i32>,
    pub(super) root_h: CudaSlice<bf16>,
    pub(super) logits: CudaSlice<f32>,
    pub(super) ids: CudaSlice<i32>,
    pub(super) lp: CudaSlice<f32>,
    pub(super) graph: Option<OwnedGraph>,
}

/// Most positions an extension replays on a graph: a round's (batch x (num_steps + 1) at
/// most); the first extension after a prompt runs eagerly on buffers of its own.
pub(super) const MAX_GRAPH_EXTENSION: usize = 128;
pub(super) const MAX_KEPT_EXTENSIONS: usize = 48;

impl GpuDraft {
    pub(super) fn new_extension(
        &self,
        gpu: &Gpu,
        aux_width: usize,
        (batch, n): (usize, usize),
    ) -> Result<Extension> {
        let (h, dv) = (self.c.hidden_size, self.c.draft_vocab_size);
        Ok(Extension {
            shape: (batch, n),
            layer: LayerBufs::new(gpu, &self.c, n)?,
            aux_slots: zeros(gpu, n)?,
            aux: zeros(gpu, n * aux_width)?,
            last: zeros(gpu, batch)?,
            root_h: zeros(gpu, batch * h)?,
            logits: zeros(gpu, batch * dv)?,
            ids: zeros(gpu, batch * self.topk)?,
            lp: zeros(gpu, batch * self.topk)?,
            graph: None,
        })
    }

    /// The extension's kernels: the aux rows gathered, `fc`, the layer, each batch row's
    /// last output kept in `src` (the first level's parents) and its lm_head and top-k.
    pub(super) fn extension_ops(
        &mut self,
        gpu: &Gpu,
        embed: &CudaSlice<bf16>,
        aux: &AuxStore,
        e: &mut Extension,
    ) -> Result<()> {
        let (h, aw, batch) = (self.c.hidden_size, aux.width(), e.shape.0);
        ops::rows_gather_into(
            gpu,
            &aux.rows().as_view(),
            &e.aux_slots.as_view(),
            aw,
            &mut e.aux.as_view_mut(),
        )
        .map_err(kernel_err)?;
        linear_w(gpu, &e.aux, &self.w.fc, h, aw, &mut e.layer.x, None)?;
        Layer { c: &self.c, w: &self.w, k: &mut self.k, v: &mut self.v, block_size: self.block_size }.run(
            gpu,
            embed,
            &mut e.layer,
            &self.tables.as_view(),
        )?;
        ops::rows_gather_into(
            gpu,
            &e.layer.x.as_view(),
            &e.last.as_view(),
            h,
            &mut self.src.slice_mut(..batch * h),
        )
        .map_err(kernel_err)?;
        ops::rows_gather_into(
            gpu,
            &e.layer.normed.as_view(),
            &e.last.as_view(),
            h,
            &mut e.root_h.as_view_mut(),
        )
        .map_err(kernel_err)?;
        self.logits_topk(gpu, &e.root_h, &mut e.logits, (&mut e.ids, &mut e.lp))
    }
}
