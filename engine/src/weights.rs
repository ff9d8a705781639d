//! Model weights in f32 for the CPU backend, from safetensors (single file or sharded with
//! `model.safetensors.index.json`, memory-mapped, bf16/f16/f32, and block-FP8 projections
//! with their `weight_scale_inv`) or from a seeded random preset. Every tensor's shape is
//! checked against the config.
//!
//! FP8 projections keep both forms: `Mat::fp8` holds the codes and block scales (what the
//! GPU streams), `Mat::data` their f32 dequantization, so the CPU backend runs FP8 models
//! unchanged and is the reference for the FP8 kernels.

use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
pub use crate::fp8::Fp8Weight;
use crate::random_weights::random_tensor_f32;
use crate::tensor_names::{TensorSpec, is_projection, scale_name, tensor_specs};
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A row-major matrix [rows, cols]; for linears HF's layout [out_features, in_features].
#[derive(Debug, Clone)]
pub struct Mat {
    /// The values in f32; for an FP8 matrix exactly `decode(q) * scale` of `fp8`.
    pub data: Vec<f32>,
    pub rows: usize,
    pub cols: usize,
    /// Some for an FP8 projection: codes [rows, cols] and per-block scales.
    pub fp8: Option<Fp8Weight>,
}

impl Mat {
    pub fn new(data: Vec<f32>, rows: usize, cols: usize) -> Mat {
        debug_assert_eq!(data.len(), rows * cols);
        Mat { data, rows, cols, fp8: None }
    }

    /// An FP8 matrix; `data` becomes its reference dequantization.
    pub fn from_fp8(w: Fp8Weight, rows: usize, cols: usize) -> Mat {
        let data = crate::fp8::dequantize(&w, rows, cols);
        Mat { data, rows, cols, fp8: Some(w) }
    }

    /// Quantize to 128x128-block FP8 in place: `fp8` gets codes and scales, and `data` is
    /// overwritten with their dequantization. Costs one byte per element beyond the f32
    /// values already held (no second f32 copy), so even Qwen3-8B quantizes in place.
    pub fn quantize_fp8(&mut self) -> std::result::Result<(), String> {
        if self.fp8.is_some() {
            return Ok(());
        }
        let q = crate::fp8::quantize(&self.data, self.rows, self.cols)?;
        crate::fp8::dequantize_into(&q, self.rows, self.cols, &mut self.data);
        self.fp8 = Some(q);
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub input_norm: Vec<f32>,
    pub q_proj: Mat,
    pub k_proj: Mat,
    pub v_proj: Mat,
    pub o_proj: Mat,
    pub q_norm: Vec<f32>,
    pub k_norm: Vec<f32>,
    pub post_norm: Vec<f32>,
    pub gate_proj: Mat,
    pub up_proj: Mat,
    pub down_proj: Mat,
}

impl LayerWeights {
    /// The seven linear projections with their module names (tensor_names::PROJECTIONS order).
    pub fn projections(&self) -> [(&'static str, &Mat); 7] {
        let p = crate::tensor_names::PROJECTIONS;
        [
            (p[0], &self.q_proj),
            (p[1], &self.k_proj),
            (p[2], &self.v_proj),
            (p[3], &self.o_proj),
            (p[4], &self.gate_proj),
            (p[5], &self.up_proj),
            (p[6], &self.down_proj),
        ]
    }

    pub fn projections_mut(&mut self) -> [(&'static str, &mut Mat); 7] {
        let p = crate::tensor_names::PROJECTIONS;
        [
            (p[0], &mut self.q_proj),
            (p[1], &mut self.k_proj),
            (p[2], &mut self.v_proj),
            (p[3], &mut self.o_proj),
            (p[4], &mut self.gate_proj),
            (p[5], &mut self.up_proj),
            (p[6], &mut self.down_proj),
        ]
    }
}

#[derive(Debug, Clone)]
pub struct ModelWeights {
    pub embed: Mat,
    pub layers: Vec<LayerWeights>,
    pub final_norm: Vec<f32>,
    /// None when tied to `embed`.
    pub lm_head: Option<Mat>,
}

/// Where weights came from: served on /v1/engine/info and /v1/models.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WeightsOrigin {
    Random { preset: String, seed: u64 },
    Checkpoint { dir: PathBuf, dtype: String },
}

impl WeightsOrigin {
    pub fn is_random(&self) -> bool {
        matches!(self, WeightsOrigin::Random { .. })
    }
}

impl ModelWeights {
    /// Whether the layers' projections carry FP8 codes (a quantized model).
    pub fn has_fp8(&self) -> bool {
        self.layers.iter().any(|l| l.projections().iter().any(|(_, m)| m.fp8.is_some()))
    }

    pub fn lm_head(&self) -> &Mat {
        self.lm_head.as_ref().unwrap_or(&self.embed)
    }

    /// Seeded random weights of `cfg`'s shape (bf16-rounded, see random_weights); when
    /// `cfg.quantization` is set, the projections are then quantized to FP8, so a random FP8
    /// model is the FP8 version of the random bf16 one.
    pub fn random(cfg: &ModelConfig, seed: u64) -> Result<Self> {
        // Each tensor has its own seeded stream, so generating them in parallel changes nothing.
        use rayon::prelude::*;
        let specs = tensor_specs(cfg);
        let mut data: Vec<Option<Vec<f32>>> =
            specs.par_iter().map(|s| Some(random_tensor_f32(s, seed))).collect();
        let index: HashMap<&str, usize> =
            specs.iter().enumerate().map(|(i, s)| (s.name.as_str(), i)).collect();
        let mut w = Self::build(cfg, |spec| {
            let d = data[index[spec.name.as_str()]].take().expect("each tensor taken once");
            Ok(plain_mat(spec, d))
        })?;
        if cfg.quantization.is_some() {
            w.quantize_fp8()?;
        }
        Ok(w)
    }

    /// Load from a checkpoint directory; returns the weights and the checkpoint's dtypes
    /// (e.g. "bf16", or "bf16+f32+f8_e4m3" for Qwen3-8B-FP8). `cfg` must be the checkpoint's
    /// own config: FP8 projections are read as such exactly when it has a
    /// `quantization_config` (quantizing a bf16 checkpoint is `quantize_fp8` afterwards).
    pub fn load(cfg: &ModelConfig, dir: &Path) -> Result<(Self, String)> {
        let files = CheckpointFiles::open(dir)?;
        let mut dtypes = std::collections::BTreeSet::new();
        let w = Self::build(cfg, |spec| {
            let (m, dts) = files.read(spec, cfg.quantization.is_some())?;
            dtypes.extend(dts);
            Ok(m)
        })?;
        Ok((w, dtypes.into_iter().collect::<Vec<_>>().join("+")))
    }

    /// Quantize every layer's seven projections to 128x128-block FP8 in place (see
    /// `Mat::quantize_fp8`), tensors in parallel; embeddings and lm_head stay as they are.
    pub fn quantize_fp8(&mut self) -> Result<()> {
        use rayon::prelude::*;
        self.layers
            .par_iter_mut()
            .enumerate()
            .flat_map_iter(|(i, l)| l.projections_mut().map(move |(name, m)| (i, name, m)))
            .try_for_each(|(i, name, m)| {
                m.quantize_fp8().map_err(|e| {
                    EngineError::Weights(format!(
                        "quantizing `{}.{name}.weight` to fp8: {e}",
                        crate::tensor_names::layer_prefix(i)
                    ))
                })
            })
    }

    fn build(cfg: &ModelConfig, mut get: impl FnMut(&TensorSpec) -> Result<Mat>) -> Result<Self> {
        let mut map: HashMap<String, Mat> = HashMap::new();
        for spec in tensor_specs(cfg) {
            let m = get(&spec)?;
            map.insert(spec.name.clone(), m);
        }
        // The spec list is the single source of names, so every lookup below succeeds.
        let mut mat = |name: &str| map.remove(name).expect("spec list and loader agree");
        let embed = mat("model.embed_tokens.weight");
        let lm_head = (!cfg.tie_word_embeddings).then(|| mat("lm_head.weight"));
        let final_norm = mat("model.norm.weight").data;
        let layers = (0..cfg.num_hidden_layers)
            .map(|i| {
                let p = crate::tensor_names::layer_prefix(i);
                let mut m = |suffix: &str| mat(&format!("{p}.{suffix}.weight"));
                LayerWeights {
                    input_norm: m("input_layernorm").data,
                    q_proj: m("self_attn.q_proj"),
                    k_proj: m("self_attn.k_proj"),
                    v_proj: m("self_attn.v_proj"),
                    o_proj: m("self_attn.o_proj"),
                    q_norm: m("self_attn.q_norm").data,
                    k_norm: m("self_attn.k_norm").data,
                    post_norm: m("post_attention_layernorm").data,
                    gate_proj: m("mlp.gate_proj"),
                    up_proj: m("mlp.up_proj"),
                    down_proj: m("mlp.down_proj"),
                }
            })
            .collect();
        Ok(ModelWeights { embed, layers, final_norm, lm_head })
    }
}

/// The memory-mapped safetensors files of one checkpoint and which file holds each tensor.
pub(crate) struct CheckpointFiles {
    maps: Vec<(PathBuf, memmap2::Mmap)>,
    location: HashMap<String, usize>,
}

impl CheckpointFiles {
    pub(crate) fn open(dir: &Path) -> Result<Self> {
        let index = dir.join("model.safetensors.index.json");
        let file_names: Vec<String> = if index.exists() {
            let text = std::fs::read_to_string(&index).map_err(|e| EngineError::io(&index, e))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|source| EngineError::Json { path: index.clone(), source })?;
            let map = v["weight_map"].as_object().ok_or_else(|| {
                EngineError::Weights(format!("{}: no `weight_map` object", index.display()))
            })?;
            let mut names: Vec<String> = map.values().filter_map(|f| f.as_str().map(String::from)).collect();
            names.sort();
            names.dedup();
            names
        } else {
            vec!["model.safetensors".to_string()]
        };
        let mut maps = Vec::new();
        let mut location = HashMap::new();
        for (i, name) in file_names.iter().enumerate() {
            // The index names shards beside itself: a path elsewhere (`/etc/x`, `../x`) or
            // anything but a regular file (a FIFO would block the open) is refused.
            let plain =
                !name.is_empty() && !name.contains('/') && name != ".." && name.ends_with(".safetensors");
            if !plain {
                return Err(EngineError::Weights(format!(
                    "{}: shard {name:?} is not a .safetensors file name in the checkpoint folder",
                    index.display()
                )));
            }
            let path = dir.join(name);
            let meta = std::fs::metadata(&path).map_err(|e| EngineError::io(&path, e))?;
            if !meta.is_file() {
                return Err(EngineError::Weights(format!("{}: not a regular file", path.display())));
            }
            let file = std::fs::File::open(&path).map_err(|e| EngineError::io(&path, e))?;
            // SAFETY: the file is only read; a checkpoint changed under a running engine is
            // outside what we support (as for every mmap-based loader).
            let mmap = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| EngineError::io(&path, e))?;
            let st = SafeTensors::deserialize(&mmap)
                .map_err(|e| EngineError::Weights(format!("{}: {e}", path.display())))?;
            for n in st.names() {
                location.insert(n.to_string(), i);
            }
            maps.push((path, mmap));
        }
        Ok(CheckpointFiles { maps, location })
    }

    /// The safetensors view of one tensor, by name.
    pub(crate) fn view(&self, name: &str) -> Result<(SafeTensors<'_>, &Path)> {
        let &i = self
            .location
            .get(name)
            .ok_or_else(|| EngineError::Weights(format!("tensor `{name}` missing from the checkpoint")))?;
        let (path, mmap) = &self.maps[i];
        let st = SafeTensors::deserialize(mmap)
            .map_err(|e| EngineError::Weights(format!("{}: {e}", path.display())))?;
        Ok((st, path))
    }

    /// One tensor as a Mat (vectors as [len, 1]) and the dtypes it was stored in.
    /// `fp8_projections`: the config has a quantization_config, so every projection must be
    /// F8_E4M3 with its scales, and nothing else may be.
    pub(crate) fn read(&self, spec: &TensorSpec, fp8_projections: bool) -> Result<(Mat, Vec<String>)> {
        let (st, _) = self.view(&spec.name)?;
        let t = st.tensor(&spec.name).map_err(|e| EngineError::Weights(format!("{}: {e}", spec.name)))?;
        check_shape(&spec.name, t.shape(), &spec.shape)?;
        let dtype = dtype_name(t.dtype());
        let projection = is_projection(&spec.name);
        match (t.dtype(), fp8_projections && projection) {
            (Dtype::F8_E4M3, true) => {}
            (Dtype::F8_E4M3, false) if !projection => {
                return Err(EngineError::Weights(format!(
                    "tensor `{}` is F8_E4M3; only the linear projections (q/k/v/o/gate/up/down) may be FP8",
                    spec.name
                )));
            }
            (Dtype::F8_E4M3, false) => {
                return Err(EngineError::Weights(format!(
                    "tensor `{}` is F8_E4M3 but config.json has no quantization_config",
                    spec.name
                )));
            }
            (other, true) => {
                return Err(EngineError::Weights(format!(
                    "config.json's quantization_config says fp8, but tensor `{}` is {other:?}",
                    spec.name
                )));
            }
            (_, false) => {
                let data = to_f32(&spec.name, t.dtype(), t.data())?;
                return Ok((plain_mat(spec, data), vec![dtype]));
            }
        }
        let (rows, cols) = (spec.shape[0], spec.shape[1]);
        let sname = scale_name(&spec.name);
        let (sst, _) = self.view(&sname)?;
        let s = sst.tensor(&sname).map_err(|e| EngineError::Weights(format!("{sname}: {e}")))?;
        check_shape(&sname, s.shape(), &crate::fp8::scale_shape(rows, cols))?;
        let scale_inv = to_f32(&sname, s.dtype(), s.data())?;
        let w =
            Fp8Weight { bits: t.data().to_vec(), scale_inv, block: (crate::fp8::BLOCK, crate::fp8::BLOCK) };
        Ok((Mat::from_fp8(w, rows, cols), vec![dtype, dtype_name(s.dtype())]))
    }
}

fn dtype_name(d: Dtype) -> String {
    format!("{d:?}").to_lowercase()
}

fn check_shape(name: &str, got: &[usize], want: &[usize]) -> Result<()> {
    if got != want {
        return Err(EngineError::Weights(format!(
            "tensor `{name}` has shape {got:?}, the config implies {want:?}"
        )));
    }
    Ok(())
}

/// A plain (unquantized) tensor as a Mat: matrices [rows, cols], vectors [len, 1].
fn plain_mat(spec: &TensorSpec, data: Vec<f32>) -> Mat {
    Mat::new(data, spec.shape[0], *spec.shape.get(1).unwrap_or(&1))
}

/// Little-endian f32/bf16/f16 bytes as f32.
fn to_f32(name: &str, dtype: Dtype, bytes: &[u8]) -> Result<Vec<f32>> {
    Ok(match dtype {
        Dtype::F32 => bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
        Dtype::BF16 => {
            bytes.chunks_exact(2).map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
        }
        Dtype::F16 => {
            bytes.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
        }
        other => {
            return Err(EngineError::Weights(format!("tensor `{name}`: dtype {other:?} unsupported")));
        }
    })
}

#[cfg(test)]
mod tests;
