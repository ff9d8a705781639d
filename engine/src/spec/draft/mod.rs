//! EAGLE-3 draft models: checkpoint layout, random drafts, and the CPU forward.
//!
//! - `config.rs`: the draft's config.json, checked against the target;
//! - `weights.rs`: tensor names and shapes, loading, random init;
//! - `kv.rs`: the draft's paged KV store;
//! - `forward.rs`: the midlayer, the KV extension and the tree drafting (`Draft::propose`);
//! - `writer.rs`: `make-model --eagle3`, a random draft in the published checkpoints' layout.
//!
//! `--model random:<preset>-eagle3` names a target preset and a random draft for it
//! together (`eagle3_target_preset`); a checkpoint folder names a trained draft.

pub mod config;
mod forward;
mod kv;
pub mod weights;
pub mod writer;

#[cfg(test)]
mod tests;

use super::{Draft, DraftInfo, DraftRow, DraftTree, SpecConfig};
use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use crate::weights::Mat;
use config::{AUX_LAYERS, DraftConfig};
use kv::DraftKv;
use std::path::Path;
use weights::DraftWeights;

/// The suffix of `random:<preset>-eagle3`.
pub const RANDOM_SUFFIX: &str = "-eagle3";

/// Seed of the drafts `random:<preset>-eagle3` builds (and `make-model --eagle3` writes by
/// default).
pub const RANDOM_DRAFT_SEED: u64 = 0;

/// Mixed into a random draft's seed: the draft's `lm_head.weight` shares the target's name,
/// and the same seed would make it a copy of the target's first rows.
const DRAFT_SEED_SALT: u64 = 0xE4_61_E3;

pub(crate) fn tensor_seed(seed: u64) -> u64 {
    seed ^ DRAFT_SEED_SALT
}

/// The draft vocabulary of a random draft for `target`: 32,000 like the published Qwen3
/// drafts (e.g. AngelSlim/Qwen3-8B_eagle3), 1,024 for the tiny test shapes.
pub fn default_draft_vocab(target: &ModelConfig) -> usize {
    if target.hidden_size >= 1024 { 32_000 } else { 1_024 }.min(target.vocab_size)
}

/// `random:<preset>-eagle3` -> `<preset>`, the target preset it drafts for; None for any
/// other model name (a checkpoint, a plain `random:<preset>`, an unknown preset).
pub fn eagle3_target_preset(model: &str) -> Option<&str> {
    let preset = model.strip_prefix("random:")?.strip_suffix(RANDOM_SUFFIX)?;
    crate::presets::preset(preset).map(|_| preset)
}

/// The draft a source names: `random:<preset>-eagle3` (a random draft of that preset's
/// target shape, `RANDOM_DRAFT_SEED`) or an EAGLE-3 checkpoint folder. Either is checked
/// against `target`; its KV store has `num_pages` pages of `block_size` positions.
pub fn load_draft(
    source: &str,
    target: &ModelConfig,
    num_pages: usize,
    block_size: usize,
) -> Result<Eagle3Draft> {
    if let Some(rest) = source.strip_prefix("random:") {
        let preset = eagle3_target_preset(source).ok_or_else(|| {
            EngineError::config(
                "speculative-draft-model-path",
                format!(
                    "`{source}`: a random draft is random:<preset>{RANDOM_SUFFIX}, preset one of {}",
                    crate::presets::PRESET_NAMES.join(", ")
                ),
            )
        })?;
        let shape = crate::presets::preset(preset).expect("eagle3_target_preset checked it");
        let cfg = DraftConfig::for_target(&shape, default_draft_vocab(&shape));
        cfg.check_target(target).map_err(|e| {
            EngineError::config(
                "speculative-draft-model-path",
                format!("random:{rest} does not fit the target: {e}"),
            )
        })?;
        let w = DraftWeights::random(&cfg, tensor_seed(RANDOM_DRAFT_SEED));
        return Eagle3Draft::new(cfg, w, target, num_pages, block_size, source.to_string(), true);
    }
    Eagle3Draft::load(Path::new(source), target, num_pages, block_size)
}

/// An EAGLE-3 draft with its KV store.
pub struct Eagle3Draft {
    cfg: DraftConfig,
    w: DraftWeights,
    aux_layers: Vec<usize>,
    kv: DraftKv,
    info: DraftInfo,
}

impl Eagle3Draft {
    /// Checks `cfg` against `target`; `w` must be `cfg`'s shape.
    pub fn new(
        cfg: DraftConfig,
        w: DraftWeights,
        target: &ModelConfig,
        num_pages: usize,
        block_size: usize,
        source: String,
        random_weights: bool,
    ) -> Result<Self> {
        cfg.check_target(target)?;
        let aux_layers = cfg.aux_layers(target.num_hidden_layers)?;
        let kv = DraftKv::new(num_pages, block_size, cfg.kv_dim());
        let info = DraftInfo {
            source,
            random_weights,
            draft_vocab_size: cfg.draft_vocab_size,
            aux_layers: aux_layers.clone(),
        };
        Ok(Eagle3Draft { cfg, w, aux_layers, kv, info })
    }

    /// A seeded random draft for `target` with a `draft_vocab`-token vocabulary (see
    /// `default_draft_vocab`); what `writer::write_random_draft` writes with the same seed.
    pub fn random(
        target: &ModelConfig,
        draft_vocab: usize,
        seed: u64,
        num_pages: usize,
        block_size: usize,
    ) -> Result<Self> {
        DraftConfig::check_random_vocab(target, draft_vocab)?;
        let cfg = DraftConfig::for_target(target, draft_vocab);
        let w = DraftWeights::random(&cfg, tensor_seed(seed));
        Self::new(cfg, w, target, num_pages, block_size, format!("random (seed {seed})"), true)
    }

    /// A trained draft from its checkpoint folder.
    pub fn load(dir: &Path, target: &ModelConfig, num_pages: usize, block_size: usize) -> Result<Self> {
        let cfg = DraftConfig::from_dir(dir)?;
        cfg.check_target(target)?;
        let (w, dtype) = DraftWeights::load(&cfg, dir)?;
        tracing::info!(dir = %dir.display(), dtype, draft_vocab = cfg.draft_vocab_size, "EAGLE-3 draft loaded");
        Self::new(cfg, w, target, num_pages, block_size, dir.display().to_string(), false)
    }

    pub fn config(&self) -> &DraftConfig {
        &self.cfg
    }

    pub fn weights(&self) -> &DraftWeights {
        &self.w
    }

    /// Every matrix to 128x128-block FP8 in place (its values become the dequantized ones),
    /// as the CUDA backend runs the draft of an FP8 target.
    pub fn quantize_fp8(&mut self) -> Result<()> {
        self.w.quantize_fp8()
    }
}

/// The config and what `describe` says; the weights and the KV store are too large to print.
impl std::fmt::Debug for Eagle3Draft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eagle3Draft")
            .field("cfg", &self.cfg)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl Draft for Eagle3Draft {
    fn aux_width(&self) -> usize {
        AUX_LAYERS * self.cfg.target_hidden_size
    }

    fn aux_layers(&self) -> &[usize] {
        &self.aux_layers
    }

    fn propose(&mut self, rows: &[DraftRow<'_>], cfg: &SpecConfig, embed: &Mat) -> Result<Vec<DraftTree>> {
        self.propose_rows(rows, cfg, embed)
    }

    fn describe(&self) -> DraftInfo {
        self.info.clone()
    }

    fn into_eagle3(self: Box<Self>) -> std::result::Result<Box<Eagle3Draft>, Box<dyn Draft>> {
        Ok(self)
    }
}
