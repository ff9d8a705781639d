//! Resolving `--model`: a checkpoint directory or `random:<preset>`, into a config, f32
//! weights, the tokenizer directory, and the weights' origin (served so that results made
//! with random weights say so).

use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::weights::{ModelWeights, WeightsOrigin};
use std::path::{Path, PathBuf};

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
                format!(
                    "unknown preset `{p}`; known: {}",
                    crate::presets::PRESET_NAMES.join(", ")
                ),
            )
        }),
        None => ModelConfig::from_dir(Path::new(model)),
    }
}

/// Load the model; `tokenizer` overrides where tokenizer.json is taken from.
pub fn load(model: &str, seed: u64, tokenizer: Option<&Path>) -> Result<LoadedModel> {
    let config = resolve_config(model)?;
    check_host_memory(&config)?;
    let (weights, origin, default_tok) = match model.strip_prefix("random:") {
        Some(p) => (
            ModelWeights::random(&config, seed)?,
            WeightsOrigin::Random {
                preset: p.to_string(),
                seed,
            },
            crate::tokenizer::qwen3_tokenizer_dir(),
        ),
        None => {
            let dir = PathBuf::from(model);
            let (w, dtype) = ModelWeights::load(&config, &dir)?;
            (
                w,
                WeightsOrigin::Checkpoint {
                    dir: dir.clone(),
                    dtype,
                },
                dir,
            )
        }
    };
    let tokenizer_dir = tokenizer.map(Path::to_path_buf).unwrap_or(default_tok);
    Ok(LoadedModel {
        config,
        weights,
        origin,
        tokenizer_dir,
    })
}

pub fn param_count(c: &ModelConfig) -> usize {
    crate::tensor_names::tensor_specs(c)
        .iter()
        .map(|s| s.numel())
        .sum()
}

/// The CPU backend holds f32 weights: refuse up front instead of being killed for memory
/// mid-load (e.g. random:qwen3-8b needs ~33 GB).
fn check_host_memory(c: &ModelConfig) -> Result<()> {
    let need = param_count(c) * 4;
    let avail_kb = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemAvailable:"))?
            .split_whitespace()
            .nth(1)?
            .parse::<usize>()
            .ok()
    });
    match avail_kb {
        Some(kb) if need > kb * 1024 / 10 * 9 => Err(EngineError::config(
            "model",
            format!(
                "f32 weights need {:.1} GB, only {:.1} GB of memory available",
                need as f64 / 1e9,
                kb as f64 * 1024.0 / 1e9
            ),
        )),
        _ => Ok(()),
    }
}
