//! Model weights in f32 for the CPU backend, from safetensors (single file or sharded with
//! `model.safetensors.index.json`, memory-mapped, bf16/f16/f32) or from a seeded random
//! preset. Every tensor's shape is checked against the config.

use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::random_weights::random_tensor_f32;
use crate::tensor_names::{TensorSpec, tensor_specs};
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A row-major matrix [rows, cols]; for linears HF's layout [out_features, in_features].
#[derive(Debug, Clone)]
pub struct Mat {
    pub data: Vec<f32>,
    pub rows: usize,
    pub cols: usize,
}

#[derive(Debug)]
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

#[derive(Debug)]
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
    pub fn lm_head(&self) -> &Mat {
        self.lm_head.as_ref().unwrap_or(&self.embed)
    }

    /// Seeded random weights of `cfg`'s shape (bf16-rounded, see random_weights).
    pub fn random(cfg: &ModelConfig, seed: u64) -> Result<Self> {
        // Each tensor has its own seeded stream, so generating them in parallel changes nothing.
        use rayon::prelude::*;
        let specs = tensor_specs(cfg);
        let mut data: Vec<Option<Vec<f32>>> = specs
            .par_iter()
            .map(|s| Some(random_tensor_f32(s, seed)))
            .collect();
        let index: HashMap<&str, usize> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_str(), i))
            .collect();
        Self::build(cfg, |spec| {
            Ok(data[index[spec.name.as_str()]]
                .take()
                .expect("each tensor taken once"))
        })
    }

    /// Load from a checkpoint directory; returns the weights and the checkpoint's dtype.
    pub fn load(cfg: &ModelConfig, dir: &Path) -> Result<(Self, String)> {
        let files = CheckpointFiles::open(dir)?;
        let mut dtypes = std::collections::BTreeSet::new();
        let w = Self::build(cfg, |spec| {
            let (data, dtype) = files.read_f32(spec)?;
            dtypes.insert(dtype);
            Ok(data)
        })?;
        Ok((w, dtypes.into_iter().collect::<Vec<_>>().join("+")))
    }

    fn build(
        cfg: &ModelConfig,
        mut get: impl FnMut(&TensorSpec) -> Result<Vec<f32>>,
    ) -> Result<Self> {
        let mut map: HashMap<String, (Vec<f32>, Vec<usize>)> = HashMap::new();
        for spec in tensor_specs(cfg) {
            let data = get(&spec)?;
            map.insert(spec.name.clone(), (data, spec.shape.clone()));
        }
        // The spec list is the single source of names, so every lookup below succeeds.
        let mut mat = |name: &str| {
            let (data, shape) = map.remove(name).expect("spec list and loader agree");
            Mat {
                data,
                rows: shape[0],
                cols: *shape.get(1).unwrap_or(&1),
            }
        };
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
        Ok(ModelWeights {
            embed,
            layers,
            final_norm,
            lm_head,
        })
    }
}

/// The memory-mapped safetensors files of one checkpoint and which file holds each tensor.
struct CheckpointFiles {
    maps: Vec<(PathBuf, memmap2::Mmap)>,
    location: HashMap<String, usize>,
}

impl CheckpointFiles {
    fn open(dir: &Path) -> Result<Self> {
        let index = dir.join("model.safetensors.index.json");
        let file_names: Vec<String> = if index.exists() {
            let text = std::fs::read_to_string(&index).map_err(|e| EngineError::io(&index, e))?;
            let v: serde_json::Value =
                serde_json::from_str(&text).map_err(|source| EngineError::Json {
                    path: index.clone(),
                    source,
                })?;
            let map = v["weight_map"].as_object().ok_or_else(|| {
                EngineError::Weights(format!("{}: no `weight_map` object", index.display()))
            })?;
            let mut names: Vec<String> = map
                .values()
                .filter_map(|f| f.as_str().map(String::from))
                .collect();
            names.sort();
            names.dedup();
            names
        } else {
            vec!["model.safetensors".to_string()]
        };
        let mut maps = Vec::new();
        let mut location = HashMap::new();
        for (i, name) in file_names.iter().enumerate() {
            let path = dir.join(name);
            let file = std::fs::File::open(&path).map_err(|e| EngineError::io(&path, e))?;
            // SAFETY: the file is only read; a checkpoint changed under a running engine is
            // outside what we support (as for every mmap-based loader).
            let mmap =
                unsafe { memmap2::Mmap::map(&file) }.map_err(|e| EngineError::io(&path, e))?;
            let st = SafeTensors::deserialize(&mmap)
                .map_err(|e| EngineError::Weights(format!("{}: {e}", path.display())))?;
            for n in st.names() {
                location.insert(n.to_string(), i);
            }
            maps.push((path, mmap));
        }
        Ok(CheckpointFiles { maps, location })
    }

    fn read_f32(&self, spec: &TensorSpec) -> Result<(Vec<f32>, String)> {
        let &i = self.location.get(&spec.name).ok_or_else(|| {
            EngineError::Weights(format!(
                "tensor `{}` missing from the checkpoint",
                spec.name
            ))
        })?;
        let (path, mmap) = &self.maps[i];
        let st = SafeTensors::deserialize(mmap)
            .map_err(|e| EngineError::Weights(format!("{}: {e}", path.display())))?;
        let t = st
            .tensor(&spec.name)
            .map_err(|e| EngineError::Weights(format!("{}: {e}", spec.name)))?;
        if t.shape() != spec.shape.as_slice() {
            return Err(EngineError::Weights(format!(
                "tensor `{}` has shape {:?}, the config implies {:?}",
                spec.name,
                t.shape(),
                spec.shape
            )));
        }
        let bytes = t.data();
        let data: Vec<f32> = match t.dtype() {
            Dtype::F32 => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            Dtype::BF16 => bytes
                .chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            Dtype::F16 => bytes
                .chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            other => {
                return Err(EngineError::Weights(format!(
                    "tensor `{}`: dtype {other:?} unsupported",
                    spec.name
                )));
            }
        };
        Ok((data, format!("{:?}", t.dtype()).to_lowercase()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use safetensors::tensor::TensorView;

    /// f32 and f16 checkpoints load too (make-model writes bf16). Random values are
    /// bf16-representable, hence exact in f32, and exact in f16 down to its normal range
    /// (6.1e-5), so f16 is compared with 1e-6 absolute slack.
    #[test]
    fn loads_f32_and_f16_checkpoints() {
        let cfg = crate::presets::preset("tiny-mqa").unwrap();
        let mem = ModelWeights::random(&cfg, 11).unwrap();
        for dtype in [Dtype::F32, Dtype::F16] {
            let dir = tempfile::tempdir().unwrap();
            let tensors: Vec<(String, Vec<usize>, Vec<u8>)> = tensor_specs(&cfg)
                .iter()
                .map(|s| {
                    let v = crate::random_weights::random_tensor_f32(s, 11);
                    let bytes = match dtype {
                        Dtype::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                        _ => v
                            .iter()
                            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
                            .collect(),
                    };
                    (s.name.clone(), s.shape.clone(), bytes)
                })
                .collect();
            let views = tensors.iter().map(|(n, shape, b)| {
                (n.clone(), TensorView::new(dtype, shape.clone(), b).unwrap())
            });
            safetensors::serialize_to_file(views, None, &dir.path().join("model.safetensors"))
                .unwrap();
            let (w, name) = ModelWeights::load(&cfg, dir.path()).unwrap();
            assert_eq!(name, format!("{dtype:?}").to_lowercase());
            let diff = w.layers[1]
                .gate_proj
                .data
                .iter()
                .zip(&mem.layers[1].gate_proj.data)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(diff <= 1e-6, "{dtype:?}: {diff}");
            assert_eq!(w.embed.data.len(), mem.embed.data.len());
        }
    }

    #[test]
    fn missing_tensor_is_named() {
        let cfg = crate::presets::preset("tiny").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let data = vec![0u8; 4 * 64];
        let view = TensorView::new(Dtype::F32, vec![64], &data).unwrap();
        safetensors::serialize_to_file(
            [("model.norm.weight", view)],
            None,
            &dir.path().join("model.safetensors"),
        )
        .unwrap();
        let err = ModelWeights::load(&cfg, dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("model.embed_tokens.weight") && err.contains("missing"),
            "{err}"
        );
    }
}
