//! `make-model`: writes a random-weight Hugging Face checkpoint (config.json,
//! generation_config.json, bf16 safetensors, sharded with an index past `max_shard_bytes`,
//! tokenizer files) that transformers' Qwen3ForCausalLM and our loader both read.
//! Tensors are generated lazily, one at a time, so even the 8B shape fits in memory.
//!
//! With `cfg.quantization` set the checkpoint has Qwen/Qwen3-8B-FP8's layout: each
//! projection as F8_E4M3 codes plus an f32 `<name>_scale_inv` [ceil(rows/128),
//! ceil(cols/128)], everything else bf16, and `quantization_config` in config.json. The
//! values are the FP8 quantization of the bf16 random model, as `random:<preset>` with
//! `--quantization fp8` builds it in memory.

use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::fp8;
use crate::random_weights::{random_tensor_bf16, random_tensor_f32};
use crate::tensor_names::{TensorSpec, is_projection, scale_name, tensor_specs};
use safetensors::Dtype;
use safetensors::tensor::View;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

/// Which stored tensor a lazily generated random tensor becomes.
#[derive(Clone, Copy)]
enum Part {
    Bf16,
    /// F8_E4M3 codes of a projection.
    Fp8Codes,
    /// The f32 block scales (`weight_scale_inv`) of a projection.
    Fp8Scales,
}

/// One tensor whose bytes are generated when the serializer asks for them.
struct LazyRandom {
    spec: TensorSpec,
    seed: u64,
    part: Part,
    /// The stored name and shape (the scales' differ from the spec's).
    name: String,
    shape: Vec<usize>,
}

impl LazyRandom {
    /// The stored tensors of one spec: itself, or FP8 codes + scales for a projection of a
    /// quantized model.
    fn for_spec(cfg: &ModelConfig, spec: TensorSpec, seed: u64) -> Vec<LazyRandom> {
        let plain = |part, name: String, shape: Vec<usize>| LazyRandom {
            spec: spec.clone(),
            seed,
            part,
            name,
            shape,
        };
        if cfg.quantization.is_none() || !is_projection(&spec.name) {
            return vec![plain(Part::Bf16, spec.name.clone(), spec.shape.clone())];
        }
        let (rows, cols) = (spec.shape[0], spec.shape[1]);
        vec![
            plain(Part::Fp8Codes, spec.name.clone(), spec.shape.clone()),
            plain(Part::Fp8Scales, scale_name(&spec.name), fp8::scale_shape(rows, cols).to_vec()),
        ]
    }

    fn byte_len(&self) -> usize {
        let n: usize = self.shape.iter().product();
        n * match self.part {
            Part::Bf16 => 2,
            Part::Fp8Codes => 1,
            Part::Fp8Scales => 4,
        }
    }
}

impl View for &LazyRandom {
    fn dtype(&self) -> Dtype {
        match self.part {
            Part::Bf16 => Dtype::BF16,
            Part::Fp8Codes => Dtype::F8_E4M3,
            Part::Fp8Scales => Dtype::F32,
        }
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        let (rows, cols) = (self.spec.shape[0], *self.spec.shape.get(1).unwrap_or(&1));
        Cow::Owned(match self.part {
            Part::Bf16 => {
                let v = random_tensor_bf16(&self.spec, self.seed);
                v.iter().flat_map(|x| x.to_le_bytes()).collect()
            }
            // Exactly what Mat::quantize_fp8 computes (same functions, same inputs); a
            // non-finite value cannot occur in a uniform random tensor.
            Part::Fp8Codes => {
                let v = random_tensor_f32(&self.spec, self.seed);
                fp8::quantize(&v, rows, cols).expect("random weights are finite").bits
            }
            Part::Fp8Scales => {
                let v = random_tensor_f32(&self.spec, self.seed);
                let s = fp8::block_scales(&v, rows, cols).expect("random weights are finite");
                s.iter().flat_map(|x| x.to_le_bytes()).collect()
            }
        })
    }
    fn data_len(&self) -> usize {
        self.byte_len()
    }
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(v).expect("json values serialize");
    std::fs::write(path, text).map_err(|e| EngineError::io(path, e))
}

/// Write the checkpoint into `out` (created if needed); FP8 when `cfg.quantization` is set.
/// `tokenizer_dir` holds tokenizer.json and tokenizer_config.json, copied alongside.
pub fn write_random_checkpoint(
    cfg: &ModelConfig,
    seed: u64,
    out: &Path,
    tokenizer_dir: &Path,
    max_shard_bytes: usize,
) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| EngineError::io(out, e))?;
    write_json(&out.join("config.json"), &cfg.to_hf_json())?;
    write_json(&out.join("generation_config.json"), &cfg.generation_config_json())?;
    for f in ["tokenizer.json", "tokenizer_config.json"] {
        let src = tokenizer_dir.join(f);
        std::fs::copy(&src, out.join(f)).map_err(|e| EngineError::io(&src, e))?;
    }
    // Greedy packing of tensors into shards in spec order (an FP8 weight and its scales
    // share a shard).
    let mut shards: Vec<Vec<LazyRandom>> = vec![vec![]];
    let mut bytes = 0usize;
    for spec in tensor_specs(cfg) {
        let parts = LazyRandom::for_spec(cfg, spec, seed);
        let len: usize = parts.iter().map(LazyRandom::byte_len).sum();
        if bytes > 0 && bytes + len > max_shard_bytes {
            shards.push(vec![]);
            bytes = 0;
        }
        bytes += len;
        shards.last_mut().unwrap().extend(parts);
    }
    let metadata = Some([("format".to_string(), "pt".to_string())].into_iter().collect());
    let n = shards.len();
    let mut weight_map = BTreeMap::new();
    let mut total = 0usize;
    for (i, shard) in shards.iter().enumerate() {
        let file = if n == 1 {
            "model.safetensors".to_string()
        } else {
            format!("model-{:05}-of-{n:05}.safetensors", i + 1)
        };
        for t in shard {
            weight_map.insert(t.name.clone(), file.clone());
            total += t.byte_len();
        }
        let path = out.join(&file);
        safetensors::serialize_to_file(shard.iter().map(|t| (t.name.clone(), t)), metadata.clone(), &path)
            .map_err(|e| EngineError::Weights(format!("writing {}: {e}", path.display())))?;
    }
    if n > 1 {
        let index = serde_json::json!({ "metadata": { "total_size": total }, "weight_map": weight_map });
        write_json(&out.join("model.safetensors.index.json"), &index)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::ModelWeights;

    fn tokenizer_dir() -> std::path::PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache/qwen3")).to_path_buf()
    }

    /// Writing then loading (single file and sharded) gives exactly the in-memory random
    /// weights: `random:<preset>` and `make-model` describe the same model.
    #[test]
    fn written_checkpoint_loads_back_identically() {
        let cfg = crate::presets::preset("tiny-untied").unwrap();
        let mem = ModelWeights::random(&cfg, 7).unwrap();
        for shard_bytes in [usize::MAX, 4 << 20] {
            let dir = tempfile::tempdir().unwrap();
            write_random_checkpoint(&cfg, 7, dir.path(), &tokenizer_dir(), shard_bytes).unwrap();
            assert_eq!(dir.path().join("model.safetensors.index.json").exists(), shard_bytes != usize::MAX);
            let loaded_cfg = ModelConfig::from_dir(dir.path()).unwrap();
            assert_eq!(loaded_cfg, cfg);
            let (w, dtype) = ModelWeights::load(&cfg, dir.path()).unwrap();
            assert_eq!(dtype, "bf16");
            assert_eq!(w.embed.data, mem.embed.data);
            assert_eq!(w.lm_head().data, mem.lm_head().data);
            assert_eq!(w.layers[2].down_proj.data, mem.layers[2].down_proj.data);
            assert_eq!(w.layers[1].k_norm, mem.layers[1].k_norm);
        }
    }

    /// The FP8 checkpoint (single file and sharded, odd shapes with partial blocks) loads back
    /// bit for bit as the in-memory FP8 quantization of the same random model, with
    /// Qwen3-8B-FP8's tensor layout and config.
    #[test]
    fn fp8_checkpoint_loads_back_bit_for_bit() {
        for (preset, shard_bytes) in [("tiny-mqa", usize::MAX), ("tiny-untied", 4 << 20)] {
            let cfg = ModelConfig {
                quantization: Some(crate::quant_config::QuantConfig::fp8()),
                ..crate::presets::preset(preset).unwrap()
            };
            let mem = ModelWeights::random(&cfg, 5).unwrap();
            let dir = tempfile::tempdir().unwrap();
            write_random_checkpoint(&cfg, 5, dir.path(), &tokenizer_dir(), shard_bytes).unwrap();
            let config_json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.path().join("config.json")).unwrap())
                    .unwrap();
            assert_eq!(
                config_json["quantization_config"],
                serde_json::json!({ "quant_method": "fp8", "fmt": "e4m3",
                    "activation_scheme": "dynamic", "weight_block_size": [128, 128] })
            );
            let loaded_cfg = ModelConfig::from_dir(dir.path()).unwrap();
            assert_eq!(loaded_cfg, cfg);
            let (w, dtype) = ModelWeights::load(&loaded_cfg, dir.path()).unwrap();
            assert_eq!(dtype, "bf16+f32+f8_e4m3");
            let bits = |m: &crate::weights::Mat| m.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for (l, lm) in w.layers.iter().zip(&mem.layers) {
                for ((name, a), (_, b)) in l.projections().into_iter().zip(lm.projections()) {
                    let (fa, fb) = (a.fp8.as_ref().unwrap(), b.fp8.as_ref().unwrap());
                    assert_eq!(fa, fb, "{preset} {name}: codes and scales");
                    assert_eq!(bits(a), bits(b), "{preset} {name}: dequantized values");
                    assert_eq!(fa.scale_inv.len(), a.rows.div_ceil(128) * a.cols.div_ceil(128));
                }
                assert_eq!(l.q_norm, lm.q_norm);
            }
            assert!(w.embed.fp8.is_none() && w.lm_head().fp8.is_none());
            assert_eq!(w.embed.data, mem.embed.data);
            assert_eq!(w.lm_head().data, mem.lm_head().data);
            // The same file read as bf16 would be a silent misread: refused, naming the tensor.
            let plain = ModelConfig { quantization: None, ..cfg.clone() };
            let err = ModelWeights::load(&plain, dir.path()).unwrap_err().to_string();
            assert!(
                err.contains("model.layers.0.self_attn.q_proj.weight")
                    && err.contains("no quantization_config"),
                "{err}"
            );
        }
    }

    #[test]
    fn fp8_config_over_bf16_tensors_is_an_error() {
        let cfg = crate::presets::preset("tiny").unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_random_checkpoint(&cfg, 1, dir.path(), &tokenizer_dir(), usize::MAX).unwrap();
        let fp8 = ModelConfig { quantization: Some(crate::quant_config::QuantConfig::fp8()), ..cfg };
        let err = ModelWeights::load(&fp8, dir.path()).unwrap_err().to_string();
        assert!(err.contains("model.layers.0.self_attn.q_proj.weight") && err.contains("BF16"), "{err}");
    }

    #[test]
    fn shape_mismatch_names_the_tensor() {
        let cfg = crate::presets::preset("tiny").unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_random_checkpoint(&cfg, 1, dir.path(), &tokenizer_dir(), usize::MAX).unwrap();
        let wrong = ModelConfig { intermediate_size: cfg.intermediate_size + 1, ..cfg };
        let err = ModelWeights::load(&wrong, dir.path()).unwrap_err().to_string();
        assert!(err.contains("model.layers.0.mlp.gate_proj.weight") && err.contains("shape"), "{err}");
    }
}
