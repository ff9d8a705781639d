//! An EAGLE-3 draft's `config.json` (architecture `LlamaForCausalLMEagle3`), checked on its
//! own and against the target it drafts for. Every error names the field.
//!
//! The draft is one Llama decoder layer (no q/k norms, plain RoPE) whose attention reads
//! 2 x hidden inputs; its vocabulary is a subset of the target's (`draft_vocab_size`).

use crate::config::{Geometry, ModelConfig, read_json, reject_unsupported, required};
use crate::error::{EngineError, Result};
use serde::Deserialize;
use std::path::Path;

pub const ARCHITECTURE: &str = "LlamaForCausalLMEagle3";

/// Target hidden states the draft reads per position: EAGLE-3 fuses three layers (`fc` is
/// [hidden, 3 x target hidden]).
pub const AUX_LAYERS: usize = 3;

#[derive(Debug, Clone, PartialEq)]
pub struct DraftConfig {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub max_position_embeddings: usize,
    /// The target's vocabulary (the draft shares its embedding).
    pub vocab_size: usize,
    /// Rows of `lm_head`; `d2t` maps them onto target ids.
    pub draft_vocab_size: usize,
    /// Width of one captured target hidden state (`fc` reads three of them).
    pub target_hidden_size: usize,
    /// `eagle_aux_hidden_state_layer_ids` as the config writes them (target layer outputs);
    /// None: SGLang's default. See `aux_layers` for what the target captures.
    pub aux_layer_ids: Option<Vec<usize>>,
    /// vLLM's `norm_before_residual`: the midlayer's residual is the normed hidden input
    /// instead of the raw one (SGLang has only the default, false).
    pub norm_before_residual: bool,
}

/// `config.json` as SpecForge / AngelSlim / the EAGLE repo write it.
#[derive(Deserialize)]
struct HfDraftConfig {
    architectures: Option<Vec<String>>,
    hidden_size: Option<usize>,
    intermediate_size: Option<usize>,
    num_attention_heads: Option<usize>,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    num_hidden_layers: Option<usize>,
    rms_norm_eps: Option<f64>,
    rope_theta: Option<f64>,
    rope_scaling: Option<serde_json::Value>,
    max_position_embeddings: Option<usize>,
    vocab_size: Option<usize>,
    draft_vocab_size: Option<usize>,
    target_hidden_size: Option<usize>,
    hidden_act: Option<String>,
    attention_bias: Option<bool>,
    eagle_config: Option<serde_json::Value>,
    eagle_aux_hidden_state_layer_ids: Option<serde_json::Value>,
    norm_before_residual: Option<bool>,
    tie_word_embeddings: Option<bool>,
}

fn layer_ids(v: &serde_json::Value, field: &str) -> Result<Vec<usize>> {
    let bad = || EngineError::config(field, format!("must be a list of {AUX_LAYERS} layer indices, got {v}"));
    let ids: Vec<usize> = v
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|x| x.as_u64().map(|x| x as usize).ok_or_else(bad))
        .collect::<Result<_>>()?;
    if ids.len() != AUX_LAYERS {
        return Err(bad());
    }
    Ok(ids)
}

impl DraftConfig {
    pub fn from_dir(dir: &Path) -> Result<Self> {
        Self::from_json(&read_json(&dir.join("config.json"))?)
    }

    pub fn from_json(v: &serde_json::Value) -> Result<Self> {
        let hf: HfDraftConfig = serde_json::from_value(v.clone())
            .map_err(|e| EngineError::config("config.json", e.to_string()))?;
        match &hf.architectures {
            Some(a) if a.iter().any(|a| a == ARCHITECTURE) => {}
            other => {
                return Err(EngineError::config(
                    "architectures",
                    format!("{other:?} has no {ARCHITECTURE}: not an EAGLE-3 draft"),
                ));
            }
        }
        // SGLang's llama_eagle3.py stacks further plain layers after the midlayer when
        // num_hidden_layers > 1; no published Qwen3 draft has them.
        if let Some(n) = hf.num_hidden_layers
            && n != 1
        {
            return Err(EngineError::config(
                "num_hidden_layers",
                format!("{n}: only one-layer drafts are supported"),
            ));
        }
        reject_unsupported(hf.hidden_act.as_deref(), hf.attention_bias, hf.rope_scaling.as_ref())?;
        // A tied draft would use the target's embedding as its lm_head, over the full vocab.
        if hf.tie_word_embeddings == Some(true) {
            return Err(EngineError::config(
                "tie_word_embeddings",
                "true is unsupported: the draft needs its lm_head",
            ));
        }
        let Geometry {
            hidden_size,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps,
            rope_theta,
        } = Geometry::parse(
            (hf.hidden_size, hf.num_attention_heads, hf.num_key_value_heads, hf.head_dim),
            (hf.rms_norm_eps, hf.rope_theta.unwrap_or(10_000.0)),
        )?;
        let vocab_size = required(hf.vocab_size, "vocab_size")?;
        let draft_vocab_size = required(hf.draft_vocab_size.or(hf.vocab_size), "draft_vocab_size")?;
        if draft_vocab_size > vocab_size {
            return Err(EngineError::config(
                "draft_vocab_size",
                format!("{draft_vocab_size} is larger than vocab_size {vocab_size}"),
            ));
        }
        let target_hidden_size = required(hf.target_hidden_size.or(Some(hidden_size)), "target_hidden_size")?;
        let nested = hf.eagle_config.as_ref().and_then(|e| e.get("eagle_aux_hidden_state_layer_ids"));
        let aux_layer_ids = match (nested, &hf.eagle_aux_hidden_state_layer_ids) {
            (Some(v), _) if !v.is_null() => {
                Some(layer_ids(v, "eagle_config.eagle_aux_hidden_state_layer_ids")?)
            }
            (_, Some(v)) if !v.is_null() => Some(layer_ids(v, "eagle_aux_hidden_state_layer_ids")?),
            _ => None,
        };
        let c = DraftConfig {
            hidden_size,
            intermediate_size: required(hf.intermediate_size, "intermediate_size")?,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps,
            rope_theta,
            max_position_embeddings: required(
                hf.max_position_embeddings.or(Some(40960)),
                "max_position_embeddings",
            )?,
            vocab_size,
            draft_vocab_size,
            target_hidden_size,
            aux_layer_ids,
            norm_before_residual: hf.norm_before_residual.unwrap_or(false),
        };
        c.check_sizes()?;
        Ok(c)
    }

    /// The sizes the loader multiplies must fit in usize (as for the target's config).
    fn check_sizes(&self) -> Result<()> {
        let m = |a: usize, b: usize| a.checked_mul(b);
        let fits = || {
            let (h, i) = (self.hidden_size, self.intermediate_size);
            m(self.num_attention_heads, self.head_dim)?.checked_mul(2 * h)?;
            m(m(self.target_hidden_size, AUX_LAYERS)?, h)?;
            m(i, h)?.checked_mul(3)?;
            m(self.draft_vocab_size, h)?;
            m(self.vocab_size, h)
        };
        fits()
            .map(|_| ())
            .ok_or_else(|| EngineError::config("config.json", "sizes too large: a tensor size overflows"))
    }

    /// The config of a random draft for `target`: the target's attention and MLP shape, a
    /// `draft_vocab`-token vocabulary, and explicit aux layer ids only where SGLang's
    /// default does not fit the target (fewer than 3 layers). `draft_vocab` as
    /// `check_random_vocab` allows.
    pub fn for_target(target: &ModelConfig, draft_vocab: usize) -> Self {
        let l = target.num_hidden_layers;
        DraftConfig {
            hidden_size: target.hidden_size,
            intermediate_size: target.intermediate_size,
            num_attention_heads: target.num_attention_heads,
            num_key_value_heads: target.num_key_value_heads,
            head_dim: target.head_dim,
            rms_norm_eps: target.rms_norm_eps,
            rope_theta: target.rope_theta,
            max_position_embeddings: target.max_position_embeddings,
            vocab_size: target.vocab_size,
            draft_vocab_size: draft_vocab,
            target_hidden_size: target.hidden_size,
            // Ids name layer outputs: layer 0's output is layer 1's input, the deepest a
            // 2-layer target can give.
            aux_layer_ids: (l < 3).then(|| vec![0; AUX_LAYERS]),
            norm_before_residual: false,
        }
    }

    /// A random draft's vocabulary must be a non-empty part of the target's.
    pub fn check_random_vocab(target: &ModelConfig, draft_vocab: usize) -> Result<()> {
        if !(1..=target.vocab_size).contains(&draft_vocab) {
            return Err(EngineError::config(
                "draft_vocab_size",
                format!("{draft_vocab} must be in 1..={} (the target's vocabulary)", target.vocab_size),
            ));
        }
        Ok(())
    }

    /// `config.json` as the published drafts write it.
    pub fn to_hf_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "architectures": [ARCHITECTURE],
            "model_type": "llama",
            "hidden_act": "silu",
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "num_hidden_layers": 1,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "rope_scaling": null,
            "max_position_embeddings": self.max_position_embeddings,
            "vocab_size": self.vocab_size,
            "draft_vocab_size": self.draft_vocab_size,
            "target_hidden_size": self.target_hidden_size,
            "tie_word_embeddings": false,
            "attention_bias": false,
            "torch_dtype": "bfloat16",
        });
        if let Some(ids) = &self.aux_layer_ids {
            v["eagle_config"] = serde_json::json!({ "eagle_aux_hidden_state_layer_ids": ids });
        }
        if self.norm_before_residual {
            v["norm_before_residual"] = true.into();
        }
        v
    }

    pub fn q_dim(&self) -> usize {
        self.num_attention_heads * self.head_dim
    }
    pub fn kv_dim(&self) -> usize {
        self.num_key_value_heads * self.head_dim
    }

    /// The target layers whose INPUT (hidden + residual entering layer j) the target
    /// captures, in `fc`'s column order.
    ///
    /// SGLang (`set_eagle3_layers_to_capture` in python/sglang/srt/models/llama.py and
    /// qwen2/qwen3.py): without ids, layers [2, L/2, L-3]; with ids, id + 1 for each,
    /// because the config names layer OUTPUTS and layer id's output is layer id+1's input.
    pub fn aux_layers(&self, target_layers: usize) -> Result<Vec<usize>> {
        let l = target_layers;
        let layers = match &self.aux_layer_ids {
            Some(ids) => ids.iter().map(|&id| id + 1).collect(),
            None if l >= 3 => vec![2, l / 2, l - 3],
            None => {
                return Err(EngineError::config(
                    "eagle_aux_hidden_state_layer_ids",
                    format!("absent, and the default (2, L/2, L-3) needs a target of 3+ layers, not {l}"),
                ));
            }
        };
        if let Some(&bad) = layers.iter().find(|&&j| j >= l) {
            return Err(EngineError::config(
                "eagle_aux_hidden_state_layer_ids",
                format!(
                    "{:?} names layer output {} (captured as layer {bad}'s input), past the target's {l} layers",
                    self.aux_layer_ids,
                    bad - 1
                ),
            ));
        }
        Ok(layers)
    }

    /// The draft fits `target`: it reads the target's embedding rows (same hidden size and
    /// vocabulary) and three of its hidden states, from layers it has.
    pub fn check_target(&self, target: &ModelConfig) -> Result<()> {
        if self.target_hidden_size != target.hidden_size {
            return Err(EngineError::config(
                "target_hidden_size",
                format!(
                    "{} (or hidden_size when absent) is not the target's hidden_size {}",
                    self.target_hidden_size, target.hidden_size
                ),
            ));
        }
        // The draft reads the target's embedding rows (SGLang's set_embed), so its own width
        // must be the target's.
        if self.hidden_size != target.hidden_size {
            return Err(EngineError::config(
                "hidden_size",
                format!(
                    "{} is not the target's hidden_size {} (the draft shares its embedding)",
                    self.hidden_size, target.hidden_size
                ),
            ));
        }
        if self.vocab_size != target.vocab_size {
            return Err(EngineError::config(
                "vocab_size",
                format!("{} is not the target's vocab_size {}", self.vocab_size, target.vocab_size),
            ));
        }
        self.aux_layers(target.num_hidden_layers).map(|_| ())
    }
}
