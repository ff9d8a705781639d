//! `make-model --eagle3`: a random EAGLE-3 draft in the layout of the published ones
//! (config.json + one bf16 `model.safetensors` with int64 `d2t` and bool `t2d`), which
//! `Eagle3Draft::load` reads back as exactly `Eagle3Draft::random` of the same seed.
//! Tensors are generated when the serializer asks for them, one at a time.

use super::config::DraftConfig;
use super::weights::{D2T, T2D, d2t_offsets, draft_tensor_specs, random_draft_to_target};
use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::random_weights::random_tensor_bf16;
use crate::tensor_names::TensorSpec;
use safetensors::Dtype;
use safetensors::tensor::View;
use std::borrow::Cow;
use std::path::Path;

enum Stored {
    /// A float tensor, generated as bf16 when serialized.
    Random { spec: TensorSpec, seed: u64 },
    /// Bytes already in memory (`d2t`, `t2d`: one value per vocabulary entry).
    Bytes { dtype: Dtype, shape: Vec<usize>, bytes: Vec<u8> },
}

impl View for &Stored {
    fn dtype(&self) -> Dtype {
        match self {
            Stored::Random { .. } => Dtype::BF16,
            Stored::Bytes { dtype, .. } => *dtype,
        }
    }
    fn shape(&self) -> &[usize] {
        match self {
            Stored::Random { spec, .. } => &spec.shape,
            Stored::Bytes { shape, .. } => shape,
        }
    }
    fn data(&self) -> Cow<'_, [u8]> {
        match self {
            Stored::Random { spec, seed } => {
                Cow::Owned(random_tensor_bf16(spec, *seed).iter().flat_map(|x| x.to_le_bytes()).collect())
            }
            Stored::Bytes { bytes, .. } => Cow::Borrowed(bytes),
        }
    }
    fn data_len(&self) -> usize {
        match self {
            Stored::Random { spec, .. } => spec.numel() * 2,
            Stored::Bytes { bytes, .. } => bytes.len(),
        }
    }
}

/// Write the random draft for `target` (`draft_vocab` tokens, `seed`) into `out`, created
/// if needed.
pub fn write_random_draft(target: &ModelConfig, draft_vocab: usize, seed: u64, out: &Path) -> Result<()> {
    DraftConfig::check_random_vocab(target, draft_vocab)?;
    let cfg = DraftConfig::for_target(target, draft_vocab);
    std::fs::create_dir_all(out).map_err(|e| EngineError::io(out, e))?;
    let config = out.join("config.json");
    let text = serde_json::to_string_pretty(&cfg.to_hf_json()).expect("json values serialize");
    std::fs::write(&config, text).map_err(|e| EngineError::io(&config, e))?;

    let tensor_seed = super::tensor_seed(seed);
    let mut tensors: Vec<(String, Stored)> = draft_tensor_specs(&cfg)
        .into_iter()
        .map(|spec| (spec.name.clone(), Stored::Random { spec, seed: tensor_seed }))
        .collect();
    let map = random_draft_to_target(&cfg);
    let d2t: Vec<u8> = d2t_offsets(&map).iter().flat_map(|x| x.to_le_bytes()).collect();
    tensors.push((
        D2T.into(),
        Stored::Bytes { dtype: Dtype::I64, shape: vec![cfg.draft_vocab_size], bytes: d2t },
    ));
    let mut t2d = vec![0u8; cfg.vocab_size];
    for &t in &map {
        t2d[t as usize] = 1;
    }
    tensors.push((T2D.into(), Stored::Bytes { dtype: Dtype::BOOL, shape: vec![cfg.vocab_size], bytes: t2d }));

    let path = out.join("model.safetensors");
    let metadata = Some([("format".to_string(), "pt".to_string())].into_iter().collect());
    safetensors::serialize_to_file(tensors.iter().map(|(n, t)| (n.clone(), t)), metadata, &path)
        .map_err(|e| EngineError::Weights(format!("writing {}: {e}", path.display())))
}
