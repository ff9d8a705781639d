//! The activation buffers of one forward step (step.rs), sized for its rows.

use super::attn_dims;
use crate::config::ModelConfig;
use crate::error::Result;
use crate::model::cuda::driver_err;
use kernels::cudarc::driver::CudaSlice;
use kernels::ops;
use kernels::{Gpu, bf16, f16};

/// Activation buffers for `rows` tokens.
pub(in crate::model::cuda) struct Scratch {
    pub x: CudaSlice<f32>,
    pub h: CudaSlice<bf16>,
    pub(in crate::model::cuda::step) qkv: CudaSlice<f32>,
    pub(in crate::model::cuda::step) q: CudaSlice<bf16>,
    pub(in crate::model::cuda::step) attn: CudaSlice<bf16>,
    pub(in crate::model::cuda::step) o: CudaSlice<f32>,
    pub(in crate::model::cuda::step) gu: CudaSlice<f32>,
    pub(in crate::model::cuda::step) act: CudaSlice<bf16>,
    /// The folded norms' partial sums of squares (`ops::NormEpi`): [rows, hidden / 16]
    /// (one element above a decode batch's rows, as `h16` and `act16`).
    pub(in crate::model::cuda::step) ss: CudaSlice<f32>,
    /// FP8 decode's x as f16 at 2-64 rows (half_x.rs): the norms' and the act.
    pub(in crate::model::cuda::step) h16: CudaSlice<f16>,
    pub(in crate::model::cuda::step) act16: CudaSlice<f16>,
    /// Split-context attention: how many splits and their partial states
    /// (`ops::SplitScratch`).
    pub(in crate::model::cuda::step) attn_splits: usize,
    /// A verify's tree attention splits (`ops::tree_attention_splits`; 1 outside a verify's
    /// scratch), whose partials share the buffers below.
    pub(in crate::model::cuda::step) tree_splits: usize,
    pub(in crate::model::cuda::step) part_acc: CudaSlice<f32>,
    pub(in crate::model::cuda::step) part_ml: CudaSlice<f32>,
}

impl Scratch {
    pub fn new(gpu: &Gpu, c: &ModelConfig, rows: usize) -> Result<Self> {
        Self::with_tree_splits(gpu, c, rows, 1)
    }

    /// A verify's buffers: its tree attention splits the context too.
    pub fn for_tree(gpu: &Gpu, c: &ModelConfig, rows: usize) -> Result<Self> {
        Self::with_tree_splits(gpu, c, rows, ops::tree_attention_splits(gpu, rows, c.num_key_value_heads))
    }

    fn with_tree_splits(gpu: &Gpu, c: &ModelConfig, rows: usize, tree_splits: usize) -> Result<Self> {
        let s = gpu.stream();
        let a = driver_err("alloc step buffers");
        let (hd, qd, kvd, i) = (c.hidden_size, c.q_dim(), c.kv_dim(), c.intermediate_size);
        let attn_splits = ops::attention_splits(gpu, rows, c.num_key_value_heads);
        let (na, nm) = ops::attention_partials_len(rows, attn_dims(c), attn_splits.max(tree_splits));
        // One split writes its output directly and needs no partials.
        let split = |n: usize| if attn_splits.max(tree_splits) > 1 { n } else { 1 };
        // The folded norms' sums serve decode batches of up to 8 rows, the f16 x up to 64
        // (the wide FP8 GEMMs): a prefill's step does not allocate (and zero) them.
        let decode = |n: usize| if rows <= ops::SKINNY_MAX_ROWS { n } else { 1 };
        let half = |n: usize| if rows <= ops::WIDE_MAX_ROWS { n } else { 1 };
        Ok(Scratch {
            attn_splits,
            tree_splits,
            part_acc: s.alloc_zeros(split(na)).map_err(&a)?,
            part_ml: s.alloc_zeros(split(nm)).map_err(&a)?,
            x: s.alloc_zeros(rows * hd).map_err(&a)?,
            h: s.alloc_zeros(rows * hd).map_err(&a)?,
            qkv: s.alloc_zeros(rows * (qd + 2 * kvd)).map_err(&a)?,
            q: s.alloc_zeros(rows * qd).map_err(&a)?,
            attn: s.alloc_zeros(rows * qd).map_err(&a)?,
            o: s.alloc_zeros(rows * hd).map_err(&a)?,
            gu: s.alloc_zeros(rows * 2 * i).map_err(&a)?,
            act: s.alloc_zeros(rows * i).map_err(&a)?,
            ss: s.alloc_zeros(decode(rows * ops::norm_parts(hd))).map_err(&a)?,
            h16: s.alloc_zeros(half(rows * hd)).map_err(&a)?,
            act16: s.alloc_zeros(half(rows * i)).map_err(&a)?,
        })
    }
}
