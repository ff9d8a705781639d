//! Model weights on the GPU in bf16, uploaded from the f32 `ModelWeights`. Projections that
//! read the same input are fused into one matrix so a decode step streams each input once
//! and launches one GEMV: q|k|v -> `wqkv` [q_dim + 2 kv_dim, hidden], gate|up -> `wgu`
//! [2 inter, hidden]. Norm weights stay f32 (tiny, and the norms compute in f32).

use crate::error::{EngineError, Result};
use crate::weights::{Mat, ModelWeights};
use kernels::Gpu;
use kernels::bf16;
use kernels::cudarc::driver::CudaSlice;
use rayon::prelude::*;

pub struct GpuLayer {
    pub input_norm: CudaSlice<f32>,
    pub wqkv: CudaSlice<bf16>,
    pub q_norm: CudaSlice<f32>,
    pub k_norm: CudaSlice<f32>,
    pub wo: CudaSlice<bf16>,
    pub post_norm: CudaSlice<f32>,
    pub wgu: CudaSlice<bf16>,
    pub wdown: CudaSlice<bf16>,
}

pub struct GpuWeights {
    pub embed: CudaSlice<bf16>,
    pub layers: Vec<GpuLayer>,
    pub final_norm: CudaSlice<f32>,
    /// None when tied to `embed`.
    pub lm_head: Option<CudaSlice<bf16>>,
}

impl GpuWeights {
    pub fn lm_head(&self) -> &CudaSlice<bf16> {
        self.lm_head.as_ref().unwrap_or(&self.embed)
    }
}

fn gpu_err(what: &str) -> impl Fn(kernels::cudarc::driver::DriverError) -> EngineError + '_ {
    move |e| EngineError::Backend(format!("upload {what}: {e}"))
}

fn to_bf16(mats: &[&Mat]) -> Vec<bf16> {
    let total: usize = mats.iter().map(|m| m.data.len()).sum();
    let mut out = Vec::with_capacity(total);
    for m in mats {
        let start = out.len();
        out.resize(start + m.data.len(), bf16::ZERO);
        out[start..]
            .par_chunks_mut(1 << 16)
            .zip(m.data.par_chunks(1 << 16))
            .for_each(|(d, s)| {
                d.iter_mut()
                    .zip(s)
                    .for_each(|(d, &s)| *d = bf16::from_f32(s))
            });
    }
    out
}

fn upload_mats(gpu: &Gpu, what: &str, mats: &[&Mat]) -> Result<CudaSlice<bf16>> {
    gpu.stream()
        .clone_htod(&to_bf16(mats))
        .map_err(gpu_err(what))
}

fn upload_f32(gpu: &Gpu, what: &str, v: &[f32]) -> Result<CudaSlice<f32>> {
    gpu.stream().clone_htod(v).map_err(gpu_err(what))
}

impl GpuWeights {
    pub fn upload(gpu: &Gpu, w: &ModelWeights) -> Result<Self> {
        let mut layers = Vec::with_capacity(w.layers.len());
        for (i, l) in w.layers.iter().enumerate() {
            let name = |p: &str| format!("layer {i} {p}");
            layers.push(GpuLayer {
                input_norm: upload_f32(gpu, &name("input_norm"), &l.input_norm)?,
                wqkv: upload_mats(gpu, &name("qkv"), &[&l.q_proj, &l.k_proj, &l.v_proj])?,
                q_norm: upload_f32(gpu, &name("q_norm"), &l.q_norm)?,
                k_norm: upload_f32(gpu, &name("k_norm"), &l.k_norm)?,
                wo: upload_mats(gpu, &name("o_proj"), &[&l.o_proj])?,
                post_norm: upload_f32(gpu, &name("post_norm"), &l.post_norm)?,
                wgu: upload_mats(gpu, &name("gate_up"), &[&l.gate_proj, &l.up_proj])?,
                wdown: upload_mats(gpu, &name("down_proj"), &[&l.down_proj])?,
            });
        }
        Ok(GpuWeights {
            embed: upload_mats(gpu, "embed", &[&w.embed])?,
            layers,
            final_norm: upload_f32(gpu, "final_norm", &w.final_norm)?,
            lm_head: match &w.lm_head {
                Some(m) => Some(upload_mats(gpu, "lm_head", &[m])?),
                None => None,
            },
        })
    }
}
