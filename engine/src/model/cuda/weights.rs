//! Model weights on the GPU in bf16, uploaded from the f32 `ModelWeights`. Projections that
//! read the same input are fused into one matrix so a decode step streams each input once
//! and launches one GEMM: q|k|v -> `wqkv` [q_dim + 2 kv_dim, hidden], gate|up -> `wgu`
//! [2 inter, hidden]. Norm weights stay f32 (tiny, and the norms compute in f32).
//! FP8 projections (`Mat::fp8`) upload their e4m3 codes and block scales instead; fusing
//! keeps 128-row scale blocks when every part's rows are a multiple of 128 (Qwen3-8B), and
//! expands to one scale row per weight row otherwise (tiny test models). Their codes go up
//! twice: row-major for the skinny GEMMs (1-8 rows) and prefill's dequantization, and in the
//! wide GEMM's layout (`ops::wide_tiles`) for decode and verify batches of 9-64 rows, whose
//! one-bulk-copy stages ran 8-12 % faster than any read of the row-major codes
//! (engine/PERF-LOG.md step 73). One byte per weight more (7.6 GB on Qwen3-8B): the price of
//! that speed at every batch past 8, EAGLE-3's verify included; an engine that never runs
//! those steps skips it (`Tuning::wide_fp8_copies`).
//! gate|up rows are interleaved by 8 (`ops::interleave_gate_up`) when the intermediate size
//! allows, so that decode runs gate|up and SwiGLU as one kernel (FP8 scales keep the
//! checkpoint's gate-then-up order; the kernels map rows back).

use crate::bf16_round::round_bf16;
use crate::error::{EngineError, Result};
use crate::weights::{Fp8Weight, Mat, ModelWeights};
use kernels::Gpu;
use kernels::bf16;
use kernels::cudarc::driver::CudaSlice;
use kernels::ops::{self, FP8_BLOCK, GATE_UP_GROUP, WeightLayout, interleave_gate_up, tile_weights};
use rayon::prelude::*;

/// One (possibly fused) projection [n, k] on the device.
pub enum GpuLinear {
    /// Row-major (prefill's cuBLAS GEMMs; decode too when `tiled` is None), and the same
    /// matrix tiled for the decode GEMMs (`Tuning::tiled_weights`, `ops::tile_weights`).
    Bf16 { rows: CudaSlice<bf16>, tiled: Option<CudaSlice<bf16>> },
    /// Codes [n, k] row-major and scale_inv [ceil(n / scale_rows), ceil(k / 128)];
    /// `interleave` as `ops::Fp8Matrix` (gate|up interleaved: the intermediate size, else 0).
    Fp8 {
        codes: CudaSlice<u8>,
        scale_inv: CudaSlice<f32>,
        scale_rows: usize,
        interleave: usize,
        /// The dequantized matrix in bf16 for prefill's cuBLAS GEMMs, kept from load
        /// (`CudaBackend::keep_fp8_prefill_copies`); None: prefill dequantizes into a
        /// scratch buffer every time.
        prefill: Option<CudaSlice<bf16>>,
        /// The codes in the wide GEMM's layout (`ops::wide_tiles`) for 9-64 row decode; None
        /// where the shape has none (`ops::wide_shape`: tiny test models' odd sizes) or the
        /// engine needs none (`Tuning::wide_fp8_copies`): those steps then run cuBLAS.
        wide: Option<CudaSlice<u8>>,
    },
}

impl GpuLinear {
    /// Elements (= weights) in the matrix.
    pub fn len(&self) -> usize {
        match self {
            GpuLinear::Bf16 { rows, .. } => rows.len(),
            GpuLinear::Fp8 { codes, .. } => codes.len(),
        }
    }

    /// Bytes on the device: the matrix, and its tiled or bf16 prefill copy.
    pub fn bytes(&self) -> usize {
        match self {
            GpuLinear::Bf16 { rows, tiled } => 2 * (rows.len() + tiled.as_ref().map_or(0, |t| t.len())),
            GpuLinear::Fp8 { codes, scale_inv, prefill, wide, .. } => {
                codes.len()
                    + 4 * scale_inv.len()
                    + 2 * prefill.as_ref().map_or(0, |p| p.len())
                    + wide.as_ref().map_or(0, |w| w.len())
            }
        }
    }

    /// The layout the decode GEMMs read.
    pub fn decode_layout(&self) -> WeightLayout {
        match self {
            GpuLinear::Bf16 { tiled: Some(_), .. } => WeightLayout::Tiled,
            GpuLinear::Bf16 { tiled: None, .. } | GpuLinear::Fp8 { .. } => WeightLayout::Rows,
        }
    }
}

pub struct GpuLayer {
    pub input_norm: CudaSlice<f32>,
    pub wqkv: GpuLinear,
    pub q_norm: CudaSlice<f32>,
    pub k_norm: CudaSlice<f32>,
    pub wo: GpuLinear,
    pub post_norm: CudaSlice<f32>,
    pub wgu: GpuLinear,
    /// `wgu`'s rows are gate|up interleaved by 8 (else gate rows, then up rows).
    pub gu_tiled: bool,
    pub wdown: GpuLinear,
}

pub struct GpuWeights {
    pub embed: CudaSlice<bf16>,
    pub layers: Vec<GpuLayer>,
    pub final_norm: CudaSlice<f32>,
    /// None when tied to `embed`. Row-major either way, for the skinny GEMM and, above 8
    /// rows of logits, cuBLAS (tiled for the skinny GEMM, it measured no faster:
    /// engine/PERF-LOG.md step 56).
    pub lm_head: Option<CudaSlice<bf16>>,
}

impl GpuWeights {
    /// lm_head [vocab, hidden] (the embedding when tied).
    pub fn lm_head(&self) -> &CudaSlice<bf16> {
        self.lm_head.as_ref().unwrap_or(&self.embed)
    }

    /// Bytes of the projections' decode copies held beside their row-major matrices: the
    /// bf16 ones tiled (`Tuning::tiled_weights`), the FP8 ones in the wide GEMM's layout.
    pub fn decode_copy_bytes(&self) -> usize {
        self.layers
            .iter()
            .flat_map(|l| [&l.wqkv, &l.wo, &l.wgu, &l.wdown])
            .filter_map(|w| match w {
                GpuLinear::Bf16 { tiled: Some(t), .. } => Some(t.len() * 2),
                GpuLinear::Fp8 { wide: Some(t), .. } => Some(t.len()),
                _ => None,
            })
            .sum()
    }

    /// Elements of the largest FP8 projection without a prefill copy (0 if none): the
    /// bf16 buffer prefill expands them into for cuBLAS.
    pub fn fp8_dequant_len(&self) -> usize {
        self.layers
            .iter()
            .flat_map(|l| [&l.wqkv, &l.wo, &l.wgu, &l.wdown])
            .filter(|w| matches!(w, GpuLinear::Fp8 { prefill: None, .. }))
            .map(|w| w.len())
            .max()
            .unwrap_or(0)
    }
}

fn gpu_err(what: &str) -> impl Fn(kernels::cudarc::driver::DriverError) -> EngineError + '_ {
    move |e| EngineError::Backend(format!("upload {what}: {e}"))
}

/// `mats` one after another in bf16, converted in parallel straight into the output (a
/// Qwen3-8B upload converts 16 GB; zeroing the buffer first on one thread cost seconds).
fn to_bf16(mats: &[&Mat]) -> Vec<bf16> {
    let mut out = Vec::with_capacity(mats.iter().map(|m| m.data.len()).sum());
    for m in mats {
        out.par_extend(m.data.par_iter().map(|&s| round_bf16(s)));
    }
    out
}

fn upload_mats(gpu: &Gpu, what: &str, mats: &[&Mat]) -> Result<CudaSlice<bf16>> {
    gpu.stream().clone_htod(&to_bf16(mats)).map_err(gpu_err(what))
}

/// FP8 codes and scales of projections fused along rows, before upload.
struct Fp8Parts {
    codes: Vec<u8>,
    scales: Vec<f32>,
    /// Weight rows per scale row: 128, or 1 when a part's rows are not a multiple of 128.
    scale_rows: usize,
}

/// `mats` fused along rows as FP8 (None when none of them is FP8).
fn fp8_parts(what: &str, mats: &[&Mat]) -> Result<Option<Fp8Parts>> {
    let fp8: Vec<&Fp8Weight> = mats.iter().filter_map(|m| m.fp8.as_ref()).collect();
    if fp8.is_empty() {
        return Ok(None);
    }
    if fp8.len() != mats.len() {
        return Err(EngineError::Weights(format!("{what}: some fused projections are FP8 and some are not")));
    }
    let cols = mats[0].cols;
    if let Some(bad) = fp8.iter().find(|w| w.block != (FP8_BLOCK, FP8_BLOCK)) {
        return Err(EngineError::Weights(format!(
            "{what}: FP8 block {:?}; the CUDA kernels read {FP8_BLOCK}x{FP8_BLOCK}",
            bad.block
        )));
    }
    let sc = cols.div_ceil(FP8_BLOCK);
    let aligned = mats.iter().all(|m| m.rows % FP8_BLOCK == 0);
    let mut codes = Vec::with_capacity(mats.iter().map(|m| m.rows * cols).sum());
    let mut scales = Vec::new();
    for (m, w) in mats.iter().zip(&fp8) {
        codes.extend_from_slice(&w.bits);
        if aligned {
            scales.extend_from_slice(&w.scale_inv);
        } else {
            for r in 0..m.rows {
                scales.extend_from_slice(&w.scale_inv[(r / FP8_BLOCK) * sc..][..sc]);
            }
        }
    }
    Ok(Some(Fp8Parts { codes, scales, scale_rows: if aligned { FP8_BLOCK } else { 1 } }))
}

/// FP8 codes [n, k] (row-major, and in the wide layout where the shape has one and
/// `Tuning::wide_fp8_copies` asks for it) and their scales.
fn upload_fp8(gpu: &Gpu, what: &str, p: Fp8Parts, k: usize, interleave: usize) -> Result<GpuLinear> {
    let s = gpu.stream();
    let n = p.codes.len() / k;
    let wide = match gpu.tuning().wide_fp8_copies && ops::wide_shape(n, k) {
        true => Some(s.clone_htod(&ops::wide_tiles(&p.codes, n, k)).map_err(gpu_err(what))?),
        false => None,
    };
    Ok(GpuLinear::Fp8 {
        codes: s.clone_htod(&p.codes).map_err(gpu_err(what))?,
        scale_inv: s.clone_htod(&p.scales).map_err(gpu_err(what))?,
        scale_rows: p.scale_rows,
        interleave,
        prefill: None,
        wide,
    })
}

/// A bf16 matrix [n, k] row-major, and tiled beside it unless the tuning says not to
/// (`Tuning::tiled_weights`).
fn upload_bf16(gpu: &Gpu, what: &str, w: Vec<bf16>, (n, k): (usize, usize)) -> Result<GpuLinear> {
    let s = gpu.stream();
    let tiled = if gpu.tuning().tiled_weights {
        Some(s.clone_htod(&tile_weights(&w, n, k)).map_err(gpu_err(what))?)
    } else {
        None
    };
    Ok(GpuLinear::Bf16 { rows: s.clone_htod(&w).map_err(gpu_err(what))?, tiled })
}

/// Upload `mats` fused along rows, as FP8 when they all carry codes, else as bf16.
pub(super) fn upload_linear(gpu: &Gpu, what: &str, mats: &[&Mat]) -> Result<GpuLinear> {
    let shape = (mats.iter().map(|m| m.rows).sum(), mats[0].cols);
    match fp8_parts(what, mats)? {
        Some(parts) => upload_fp8(gpu, what, parts, shape.1, 0),
        None => upload_bf16(gpu, what, to_bf16(mats), shape),
    }
}

/// gate|up fused, interleaved by 8 rows when the intermediate size is a multiple of 8
/// (returns whether it was).
pub(super) fn upload_gate_up(gpu: &Gpu, what: &str, gate: &Mat, up: &Mat) -> Result<(GpuLinear, bool)> {
    let (inter, k) = (gate.rows, gate.cols);
    if !inter.is_multiple_of(GATE_UP_GROUP) || up.rows != inter || up.cols != k {
        return Ok((upload_linear(gpu, what, &[gate, up])?, false));
    }
    let half = inter * k;
    let w = match fp8_parts(what, &[gate, up])? {
        Some(p) => {
            let codes = interleave_gate_up(&p.codes[..half], &p.codes[half..], k);
            upload_fp8(gpu, what, Fp8Parts { codes, ..p }, k, inter)?
        }
        None => {
            let w = to_bf16(&[gate, up]);
            let w = interleave_gate_up(&w[..half], &w[half..], k);
            upload_bf16(gpu, what, w, (2 * inter, k))?
        }
    };
    Ok((w, true))
}

pub(super) fn upload_f32(gpu: &Gpu, what: &str, v: &[f32]) -> Result<CudaSlice<f32>> {
    gpu.stream().clone_htod(v).map_err(gpu_err(what))
}

impl GpuWeights {
    pub fn upload(gpu: &Gpu, w: &ModelWeights) -> Result<Self> {
        let mut layers = Vec::with_capacity(w.layers.len());
        for (i, l) in w.layers.iter().enumerate() {
            let name = |p: &str| format!("layer {i} {p}");
            let (wgu, gu_tiled) = upload_gate_up(gpu, &name("gate_up"), &l.gate_proj, &l.up_proj)?;
            layers.push(GpuLayer {
                input_norm: upload_f32(gpu, &name("input_norm"), &l.input_norm)?,
                wqkv: upload_linear(gpu, &name("qkv"), &[&l.q_proj, &l.k_proj, &l.v_proj])?,
                q_norm: upload_f32(gpu, &name("q_norm"), &l.q_norm)?,
                k_norm: upload_f32(gpu, &name("k_norm"), &l.k_norm)?,
                wo: upload_linear(gpu, &name("o_proj"), &[&l.o_proj])?,
                post_norm: upload_f32(gpu, &name("post_norm"), &l.post_norm)?,
                wgu,
                gu_tiled,
                wdown: upload_linear(gpu, &name("down_proj"), &[&l.down_proj])?,
            });
        }
        let lm_head = match &w.lm_head {
            Some(m) => Some(upload_mats(gpu, "lm_head", &[m])?),
            None => None,
        };
        Ok(GpuWeights {
            embed: upload_mats(gpu, "embed", &[&w.embed])?,
            layers,
            final_norm: upload_f32(gpu, "final_norm", &w.final_norm)?,
            lm_head,
        })
    }
}
