//! FP8 models' prefill weights. Prefill (more rows than a decode batch) runs cuBLAS on bf16
//! matrices; an FP8 projection is dequantized into a scratch buffer for that at every
//! prefill, which on Qwen3-8B reads 8 GB of codes and writes 14 GB of bf16 per prompt (~6
//! ms of TTFT). `make_copies` does that dequantization once, at load, and keeps the bf16
//! matrices (2 bytes per weight of GPU memory); decode still streams the FP8 codes.
//! `EngineArgs::fp8_prefill` chooses.

use super::weights::{GpuLinear, GpuWeights};
use super::{driver_err, kernel_err};
use crate::config::ModelConfig;
use crate::error::Result;
use kernels::{Gpu, bf16, ops};

/// Give every FP8 projection its bf16 prefill copy (the same `fp8_dequant_into` prefill
/// ran, so the same bits); returns the bytes allocated.
pub(super) fn make_copies(gpu: &Gpu, cfg: &ModelConfig, w: &mut GpuWeights) -> Result<usize> {
    let (hd, qd, kvd, inter) = (cfg.hidden_size, cfg.q_dim(), cfg.kv_dim(), cfg.intermediate_size);
    let mut bytes = 0;
    for l in &mut w.layers {
        let shapes = [
            (&mut l.wqkv, qd + 2 * kvd, hd),
            (&mut l.wo, hd, qd),
            (&mut l.wgu, 2 * inter, hd),
            (&mut l.wdown, hd, inter),
        ];
        for (lin, n, k) in shapes {
            bytes += keep_copy(gpu, lin, n, k)?;
        }
    }
    gpu.sync().map_err(kernel_err)?;
    Ok(bytes)
}

/// Give `lin` [n, k] its bf16 prefill copy if it is FP8 without one; returns the bytes
/// allocated. The EAGLE-3 draft's FP8 matrices take one too (its first extension after a
/// prefill runs over the whole prompt).
pub(super) fn keep_copy(gpu: &Gpu, lin: &mut GpuLinear, n: usize, k: usize) -> Result<usize> {
    let GpuLinear::Fp8 { codes, scale_inv, scale_rows, interleave, prefill, .. } = lin else {
        return Ok(0);
    };
    if prefill.is_some() {
        return Ok(0);
    }
    let mut copy = gpu.stream().alloc_zeros::<bf16>(n * k).map_err(driver_err("alloc FP8 prefill copy"))?;
    let m8 = ops::Fp8Matrix {
        codes: &codes.as_view(),
        scale_inv: &scale_inv.as_view(),
        scale_rows: *scale_rows,
        n,
        k,
        interleave: *interleave,
    };
    ops::fp8_dequant_into(gpu, &m8, &mut copy.as_view_mut()).map_err(kernel_err)?;
    *prefill = Some(copy);
    Ok(n * k * std::mem::size_of::<bf16>())
}
