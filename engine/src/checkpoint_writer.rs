//! `make-model`: writes a random-weight Hugging Face checkpoint (config.json,
//! generation_config.json, bf16 safetensors, sharded with an index past `max_shard_bytes`,
//! tokenizer files) that transformers' Qwen3ForCausalLM and our loader both read.
//! Tensors are generated lazily, one at a time, so even the 8B shape fits in memory.

use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::random_weights::random_tensor_bf16;
use crate::tensor_names::{TensorSpec, tensor_specs};
use safetensors::Dtype;
use safetensors::tensor::View;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

/// One tensor whose bytes are generated when the serializer asks for them.
struct LazyRandom {
    spec: TensorSpec,
    seed: u64,
}

impl View for &LazyRandom {
    fn dtype(&self) -> Dtype {
        Dtype::BF16
    }
    fn shape(&self) -> &[usize] {
        &self.spec.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        let v = random_tensor_bf16(&self.spec, self.seed);
        Cow::Owned(v.iter().flat_map(|x| x.to_le_bytes()).collect())
    }
    fn data_len(&self) -> usize {
        self.spec.numel() * 2
    }
}

fn write_json(path: &Path, v: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(v).expect("json values serialize");
    std::fs::write(path, text).map_err(|e| EngineError::io(path, e))
}

/// Write the checkpoint into `out` (created if needed). `tokenizer_dir` holds tokenizer.json
/// and tokenizer_config.json, copied alongside.
pub fn write_random_checkpoint(
    cfg: &ModelConfig,
    seed: u64,
    out: &Path,
    tokenizer_dir: &Path,
    max_shard_bytes: usize,
) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| EngineError::io(out, e))?;
    write_json(&out.join("config.json"), &cfg.to_hf_json())?;
    write_json(
        &out.join("generation_config.json"),
        &cfg.generation_config_json(),
    )?;
    for f in ["tokenizer.json", "tokenizer_config.json"] {
        let src = tokenizer_dir.join(f);
        std::fs::copy(&src, out.join(f)).map_err(|e| EngineError::io(&src, e))?;
    }
    // Greedy packing of tensors into shards in spec order.
    let mut shards: Vec<Vec<LazyRandom>> = vec![vec![]];
    let mut bytes = 0usize;
    for spec in tensor_specs(cfg) {
        let len = spec.numel() * 2;
        if bytes > 0 && bytes + len > max_shard_bytes {
            shards.push(vec![]);
            bytes = 0;
        }
        bytes += len;
        shards.last_mut().unwrap().push(LazyRandom { spec, seed });
    }
    let metadata = Some(
        [("format".to_string(), "pt".to_string())]
            .into_iter()
            .collect(),
    );
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
            weight_map.insert(t.spec.name.clone(), file.clone());
            total += t.spec.numel() * 2;
        }
        let path = out.join(&file);
        safetensors::serialize_to_file(
            shard.iter().map(|t| (t.spec.name.clone(), t)),
            metadata.clone(),
            &path,
        )
        .map_err(|e| EngineError::Weights(format!("writing {}: {e}", path.display())))?;
    }
    if n > 1 {
        let index =
            serde_json::json!({ "metadata": { "total_size": total }, "weight_map": weight_map });
        write_json(&out.join("model.safetensors.index.json"), &index)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::ModelWeights;

    fn tokenizer_dir() -> std::path::PathBuf {
        Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../assets/cache/qwen3"
        ))
        .to_path_buf()
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
            assert_eq!(
                dir.path().join("model.safetensors.index.json").exists(),
                shard_bytes != usize::MAX
            );
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

    #[test]
    fn shape_mismatch_names_the_tensor() {
        let cfg = crate::presets::preset("tiny").unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_random_checkpoint(&cfg, 1, dir.path(), &tokenizer_dir(), usize::MAX).unwrap();
        let wrong = ModelConfig {
            intermediate_size: cfg.intermediate_size + 1,
            ..cfg
        };
        let err = ModelWeights::load(&wrong, dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("model.layers.0.mlp.gate_proj.weight") && err.contains("shape"),
            "{err}"
        );
    }
}
