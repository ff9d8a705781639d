//! Resolving `--model`: a checkpoint directory or `random:<preset>`, into a config, f32
//! weights, the tokenizer directory, and the weights' origin (served so that results made
//! with random weights say so), and `--quantization`: how the projections are stored.
//!
//! | `--quantization` | bf16 checkpoint / random     | FP8 checkpoint (quantization_config) |
//! |------------------|------------------------------|--------------------------------------|
//! | absent           | as stored (bf16)             | as stored (FP8)                      |
//! | `none`           | bf16                         | error: the checkpoint is FP8         |
//! | `fp8`            | quantized to FP8 at load     | as stored (FP8)                      |
//!
//! `none` on an FP8 checkpoint is refused rather than dequantized: it would serve a model
//! that is neither the published one nor faster, under a name that suggests the bf16 one.

use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::quant_config::QuantConfig;
use crate::weights::{ModelWeights, WeightsOrigin};
use std::path::{Path, PathBuf};

/// `--quantization`: what the operator asks for. `None` in `EngineArgs` (flag absent) means
/// "as the checkpoint stores it".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    /// Unquantized weights; an error for an FP8 checkpoint.
    None,
    /// 128x128-block FP8 projections (quantized at load unless stored so).
    Fp8,
}

pub struct LoadedModel {
    pub config: ModelConfig,
    pub weights: ModelWeights,
    pub origin: WeightsOrigin,
    pub tokenizer_dir: PathBuf,
}

/// The config a `--model` value names, without loading weights (for planning and checks).
pub fn resolve_config(model: &str) -> Result<ModelConfig> {
    match model.strip_prefix("random:") {
        Some(p) => crate::presets::preset(p).ok_or_else(|| {
            EngineError::config(
                "model",
                format!("unknown preset `{p}`; known: {}", crate::presets::PRESET_NAMES.join(", ")),
            )
        }),
        None => ModelConfig::from_dir(Path::new(model)),
    }
}

/// The config the engine will run: `model`'s own, with `quantization` applied (see the
/// table at the top).
pub fn effective_config(model: &str, quantization: Option<Quantization>) -> Result<ModelConfig> {
    apply_quantization(resolve_config(model)?, quantization)
}

fn apply_quantization(stored: ModelConfig, q: Option<Quantization>) -> Result<ModelConfig> {
    match (q, stored.quantization) {
        (None, _) | (Some(Quantization::Fp8), Some(_)) | (Some(Quantization::None), None) => Ok(stored),
        (Some(Quantization::None), Some(stored_q)) => Err(EngineError::config(
            "quantization",
            format!(
                "none asked for, but the checkpoint is {} (config.json's quantization_config); \
                 serve it as stored (leave --quantization out) or use a bf16 checkpoint",
                stored_q.name()
            ),
        )),
        (Some(Quantization::Fp8), None) => {
            Ok(ModelConfig { quantization: Some(QuantConfig::fp8()), ..stored })
        }
    }
}

/// Load the model; `tokenizer` overrides where tokenizer.json is taken from.
pub fn load(
    model: &str,
    seed: u64,
    tokenizer: Option<&Path>,
    quantization: Option<Quantization>,
) -> Result<LoadedModel> {
    let stored = resolve_config(model)?;
    let config = apply_quantization(stored.clone(), quantization)?;
    check_host_memory(&config)?;
    let started = std::time::Instant::now();
    let (weights, origin, default_tok) = match model.strip_prefix("random:") {
        Some(p) => (
            ModelWeights::random(&config, seed)?,
            WeightsOrigin::Random { preset: p.to_string(), seed },
            crate::tokenizer::qwen3_tokenizer_dir(),
        ),
        None => {
            let dir = PathBuf::from(model);
            // Read as stored, then quantize in place when asked (bf16 -> fp8 at load).
            let (mut w, dtype) = ModelWeights::load(&stored, &dir)?;
            if config.quantization.is_some() && stored.quantization.is_none() {
                w.quantize_fp8()?;
            }
            (w, WeightsOrigin::Checkpoint { dir: dir.clone(), dtype }, dir)
        }
    };
    tracing::info!(seconds = started.elapsed().as_secs_f64(), "weights in host memory (f32)");
    let tokenizer_dir = tokenizer.map(Path::to_path_buf).unwrap_or(default_tok);
    Ok(LoadedModel { config, weights, origin, tokenizer_dir })
}

pub fn param_count(c: &ModelConfig) -> usize {
    crate::tensor_names::tensor_specs(c).iter().map(|s| s.numel()).sum()
}

/// Parameters of the linear projections: the FP8 ones when quantized.
pub fn projection_param_count(c: &ModelConfig) -> usize {
    crate::tensor_names::tensor_specs(c)
        .iter()
        .filter(|s| crate::tensor_names::is_projection(&s.name))
        .map(|s| s.numel())
        .sum()
}

/// The host holds f32 weights (plus one byte per FP8 code): refuse up front instead of being
/// killed for memory mid-load (e.g. random:qwen3-8b needs ~33 GB, ~40 GB in FP8).
fn check_host_memory(c: &ModelConfig) -> Result<()> {
    let fp8_codes = if c.quantization.is_some() { projection_param_count(c) } else { 0 };
    let need = param_count(c) * 4 + fp8_codes;
    let avail_kb = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines().find(|l| l.starts_with("MemAvailable:"))?.split_whitespace().nth(1)?.parse::<usize>().ok()
    });
    match avail_kb {
        Some(kb) if need > kb * 1024 / 10 * 9 => Err(EngineError::config(
            "model",
            format!(
                "f32 weights (+ fp8 codes) need {:.1} GB, only {:.1} GB of memory available",
                need as f64 / 1e9,
                kb as f64 * 1024.0 / 1e9
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantization_request_against_what_is_stored() {
        let bf16 = crate::presets::preset("tiny").unwrap();
        let fp8 = ModelConfig { quantization: Some(QuantConfig::fp8()), ..bf16.clone() };
        let q = |stored: &ModelConfig, r| apply_quantization(stored.clone(), r);
        assert_eq!(q(&bf16, None).unwrap(), bf16);
        assert_eq!(q(&bf16, Some(Quantization::None)).unwrap(), bf16);
        assert_eq!(q(&bf16, Some(Quantization::Fp8)).unwrap(), fp8);
        assert_eq!(q(&fp8, None).unwrap(), fp8);
        assert_eq!(q(&fp8, Some(Quantization::Fp8)).unwrap(), fp8);
        let err = q(&fp8, Some(Quantization::None)).unwrap_err().to_string();
        assert!(err.contains("quantization") && err.contains("fp8"), "{err}");
    }

    /// `random:<preset>` with fp8 and a bf16 checkpoint quantized at load give the same
    /// weights; loading an FP8 checkpoint needs no flag and refuses `none`.
    #[test]
    fn fp8_at_load_from_random_and_from_bf16_checkpoint() {
        let random = load("random:tiny", 4, None, Some(Quantization::Fp8)).unwrap();
        assert!(random.origin.is_random());
        assert_eq!(random.config.quantization, Some(QuantConfig::fp8()));
        let q = &random.weights.layers[1].gate_proj;
        assert!(q.fp8.is_some() && random.weights.embed.fp8.is_none());

        let tok = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache/qwen3"));
        let bf16_dir = tempfile::tempdir().unwrap();
        let cfg = crate::presets::preset("tiny").unwrap();
        crate::checkpoint_writer::write_random_checkpoint(&cfg, 4, bf16_dir.path(), tok, usize::MAX).unwrap();
        let path = bf16_dir.path().to_str().unwrap();
        let at_load = load(path, 0, None, Some(Quantization::Fp8)).unwrap();
        assert_eq!(at_load.config.quantization, Some(QuantConfig::fp8()));
        assert_eq!(at_load.weights.layers[1].gate_proj.fp8, q.fp8);
        assert_eq!(at_load.weights.layers[1].gate_proj.data, q.data);
        assert!(load(path, 0, None, None).unwrap().weights.layers[0].q_proj.fp8.is_none());

        let fp8_dir = tempfile::tempdir().unwrap();
        crate::checkpoint_writer::write_random_checkpoint(&random.config, 4, fp8_dir.path(), tok, usize::MAX)
            .unwrap();
        let path = fp8_dir.path().to_str().unwrap();
        let stored = load(path, 0, None, None).unwrap();
        assert_eq!(stored.weights.layers[1].gate_proj.fp8, q.fp8);
        assert!(load(path, 0, None, Some(Quantization::None)).is_err());
        assert!(effective_config(path, Some(Quantization::None)).is_err());
    }
}
