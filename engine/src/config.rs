//! Qwen3 model config, read from a Hugging Face `config.json` (+ `generation_config.json`)
//! and checked at load: every error names the offending field.

use crate::error::{EngineError, Result};
use crate::quant_config::QuantConfig;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The architecture of one Qwen3 model. Immutable after load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub max_position_embeddings: usize,
    pub tie_word_embeddings: bool,
    /// End-of-sequence ids: `eos_token_id` of config.json merged with generation_config.json's.
    pub eos_token_ids: Vec<u32>,
    pub bos_token_id: Option<u32>,
    /// How the linear projections are stored (config.json's `quantization_config`); None for
    /// plain bf16/f16/f32. `--quantization fp8` sets it on a model quantized at load, so it
    /// always describes the weights the engine holds.
    #[serde(default)]
    pub quantization: Option<QuantConfig>,
}

/// `config.json` as Hugging Face writes it; optional fields get Qwen3's defaults.
#[derive(Deserialize)]
struct HfConfig {
    architectures: Option<Vec<String>>,
    model_type: Option<String>,
    vocab_size: Option<usize>,
    hidden_size: Option<usize>,
    intermediate_size: Option<usize>,
    num_hidden_layers: Option<usize>,
    num_attention_heads: Option<usize>,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    rms_norm_eps: Option<f64>,
    rope_theta: Option<f64>,
    max_position_embeddings: Option<usize>,
    tie_word_embeddings: Option<bool>,
    eos_token_id: Option<serde_json::Value>,
    bos_token_id: Option<serde_json::Value>,
    rope_scaling: Option<serde_json::Value>,
    hidden_act: Option<String>,
    attention_bias: Option<bool>,
    quantization_config: Option<serde_json::Value>,
}

/// A size the config must give, and not as 0; the error names the field. (The draft's
/// config, spec/draft/config.rs, reads its sizes with it too.)
/// The attention geometry and norm constants a Qwen3 or Llama config.json states, checked
/// the same way for the target and an EAGLE-3 draft: heads divisible by KV heads, an even
/// head_dim (RoPE rotates halves; hidden / heads when absent), eps in (0, 1), theta > 1.
pub(crate) struct Geometry {
    pub hidden_size: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
}

impl Geometry {
    /// From (hidden_size, num_attention_heads, num_key_value_heads, head_dim) as read, and
    /// (rms_norm_eps as read, rope_theta with the caller's default applied).
    pub fn parse(
        (hidden, heads, kv_heads, head_dim): (Option<usize>, Option<usize>, Option<usize>, Option<usize>),
        (eps, rope_theta): (Option<f64>, f64),
    ) -> Result<Geometry> {
        let hidden_size = required(hidden, "hidden_size")?;
        let num_attention_heads = required(heads, "num_attention_heads")?;
        let num_key_value_heads = required(kv_heads.or(Some(num_attention_heads)), "num_key_value_heads")?;
        if num_attention_heads % num_key_value_heads != 0 {
            return Err(EngineError::config(
                "num_key_value_heads",
                format!("{num_key_value_heads} does not divide num_attention_heads {num_attention_heads}"),
            ));
        }
        let head_dim = match head_dim {
            Some(d) => required(Some(d), "head_dim")?,
            None if hidden_size % num_attention_heads == 0 => hidden_size / num_attention_heads,
            None => {
                return Err(EngineError::config(
                    "head_dim",
                    "missing and hidden_size % num_attention_heads != 0",
                ));
            }
        };
        if head_dim % 2 != 0 {
            return Err(EngineError::config("head_dim", "must be even for RoPE"));
        }
        let rms_norm_eps = eps.unwrap_or(1e-6);
        if !(rms_norm_eps > 0.0 && rms_norm_eps < 1.0) {
            return Err(EngineError::config("rms_norm_eps", "must be in (0, 1)"));
        }
        if rope_theta.is_nan() || rope_theta <= 1.0 {
            return Err(EngineError::config("rope_theta", "must be > 1"));
        }
        Ok(Geometry {
            hidden_size,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps,
            rope_theta,
        })
    }
}

/// What neither the target's nor a draft's layers compute: an activation other than SiLU,
/// q/k/v biases, scaled RoPE. Each is an error naming its field, not a silently wrong model.
pub(crate) fn reject_unsupported(
    hidden_act: Option<&str>,
    attention_bias: Option<bool>,
    rope_scaling: Option<&serde_json::Value>,
) -> Result<()> {
    if let Some(act) = hidden_act
        && act != "silu"
    {
        return Err(EngineError::config("hidden_act", format!("`{act}` unsupported, only silu")));
    }
    if attention_bias == Some(true) {
        return Err(EngineError::config("attention_bias", "true is unsupported (no q/k/v biases)"));
    }
    if rope_scaling.is_some_and(|v| !v.is_null()) {
        return Err(EngineError::config("rope_scaling", "unsupported (only plain RoPE)"));
    }
    Ok(())
}

pub(crate) fn required(v: Option<usize>, field: &str) -> Result<usize> {
    match v {
        None => Err(EngineError::config(field, "missing")),
        Some(0) => Err(EngineError::config(field, "must be > 0")),
        Some(x) => Ok(x),
    }
}

/// An id or a list of ids, as HF configs write `eos_token_id`.
fn token_ids(v: &Option<serde_json::Value>, field: &str) -> Result<Vec<u32>> {
    let bad = || EngineError::config(field, "must be an integer or a list of integers");
    match v {
        None | Some(serde_json::Value::Null) => Ok(vec![]),
        Some(serde_json::Value::Number(n)) => Ok(vec![n.as_u64().ok_or_else(bad)? as u32]),
        Some(serde_json::Value::Array(a)) => {
            a.iter().map(|x| x.as_u64().map(|x| x as u32).ok_or_else(bad)).collect()
        }
        Some(_) => Err(bad()),
    }
}

/// Every size the engine derives from the config (`q_dim`, each tensor's `rows * cols`, the
/// parameter count, its f32 bytes plus one FP8 code each) must fit in usize: loading and the
/// memory check multiply them, and an overflow panics (debug) or wraps to a wrong size.
/// The most decoder layers a config may declare.
const MAX_LAYERS: usize = 1024;

fn check_sizes(c: &ModelConfig) -> Result<()> {
    // Far beyond any real model, but small enough that laying out the tensor list (one
    // entry per layer's weight) cannot exhaust memory before the size check refuses it.
    if c.num_hidden_layers > MAX_LAYERS {
        return Err(EngineError::config(
            "config.json",
            format!("num_hidden_layers {} is above {MAX_LAYERS}", c.num_hidden_layers),
        ));
    }
    let m = |a: usize, b: usize| a.checked_mul(b);
    let (h, i, d) = (c.hidden_size, c.intermediate_size, c.head_dim);
    let count = || {
        let (q, kv) = (m(c.num_attention_heads, d)?, m(c.num_key_value_heads, d)?);
        // One layer: q, k, v, o, gate, up, down, then its four norms.
        let sizes = [m(q, h)?, m(kv, h)?, m(kv, h)?, m(h, q)?, m(i, h)?, m(i, h)?, m(h, i)?, h, h, d, d];
        let layer = sizes.into_iter().try_fold(0usize, usize::checked_add)?;
        let embeddings = m(c.vocab_size, h)?.checked_mul(2)?;
        let all = m(layer, c.num_hidden_layers)?.checked_add(embeddings)?;
        all.checked_add(h)?.checked_mul(5)
    };
    let too_large = || EngineError::config("config.json", "sizes too large: the parameter count overflows");
    count().map(|_| ()).ok_or_else(too_large)
}

/// A JSON file; errors name the path.
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).map_err(|e| EngineError::io(path, e))?;
    serde_json::from_str(&text).map_err(|source| EngineError::Json { path: path.into(), source })
}

impl ModelConfig {
    /// Load `dir/config.json` and, when present, `dir/generation_config.json`.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let cfg = read_json(&dir.join("config.json"))?;
        let gen_path = dir.join("generation_config.json");
        let gen_cfg = if gen_path.exists() { Some(read_json(&gen_path)?) } else { None };
        Self::from_json(&cfg, gen_cfg.as_ref())
    }

    pub fn from_json(cfg: &serde_json::Value, gen_cfg: Option<&serde_json::Value>) -> Result<Self> {
        let hf: HfConfig = serde_json::from_value(cfg.clone())
            .map_err(|e| EngineError::config("config.json", e.to_string()))?;
        if let Some(mt) = &hf.model_type
            && mt != "qwen3"
        {
            return Err(EngineError::config("model_type", format!("`{mt}` is not supported, only `qwen3`")));
        }
        if let Some(archs) = &hf.architectures
            && !archs.iter().any(|a| a == "Qwen3ForCausalLM")
        {
            return Err(EngineError::config("architectures", format!("{archs:?} has no Qwen3ForCausalLM")));
        }
        reject_unsupported(hf.hidden_act.as_deref(), hf.attention_bias, hf.rope_scaling.as_ref())?;
        let Geometry {
            hidden_size,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps,
            rope_theta,
        } = Geometry::parse(
            (hf.hidden_size, hf.num_attention_heads, hf.num_key_value_heads, hf.head_dim),
            (hf.rms_norm_eps, hf.rope_theta.unwrap_or(1_000_000.0)),
        )?;
        let vocab_size = required(hf.vocab_size, "vocab_size")?;
        let mut eos = token_ids(&hf.eos_token_id, "eos_token_id")?;
        if let Some(g) = gen_cfg {
            for id in token_ids(&g.get("eos_token_id").cloned(), "generation_config.eos_token_id")? {
                if !eos.contains(&id) {
                    eos.push(id);
                }
            }
        }
        if let Some(bad) = eos.iter().find(|&&id| id as usize >= vocab_size) {
            return Err(EngineError::config("eos_token_id", format!("{bad} >= vocab_size {vocab_size}")));
        }
        let c = ModelConfig {
            vocab_size,
            hidden_size,
            intermediate_size: required(hf.intermediate_size, "intermediate_size")?,
            num_hidden_layers: required(hf.num_hidden_layers, "num_hidden_layers")?,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            rms_norm_eps,
            rope_theta,
            max_position_embeddings: required(
                hf.max_position_embeddings.or(Some(40960)),
                "max_position_embeddings",
            )?,
            tie_word_embeddings: hf.tie_word_embeddings.unwrap_or(false),
            eos_token_ids: eos,
            bos_token_id: token_ids(&hf.bos_token_id, "bos_token_id")?.first().copied(),
            quantization: QuantConfig::from_hf(hf.quantization_config.as_ref())?,
        };
        check_sizes(&c)?;
        Ok(c)
    }

    /// `config.json` in Hugging Face's format (what `make-model` writes; transformers loads it).
    pub fn to_hf_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": self.rope_theta,
            "rope_scaling": null,
            "max_position_embeddings": self.max_position_embeddings,
            "tie_word_embeddings": self.tie_word_embeddings,
            "hidden_act": "silu",
            "attention_bias": false,
            "attention_dropout": 0.0,
            "use_sliding_window": false,
            "sliding_window": null,
            "max_window_layers": self.num_hidden_layers,
            "initializer_range": 0.02,
            "use_cache": true,
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_ids.first(),
            "torch_dtype": "bfloat16",
        });
        // Absent, not null, for unquantized models: that is what HF writes.
        if let Some(q) = &self.quantization {
            v["quantization_config"] = q.to_hf_json();
        }
        v
    }

    pub fn generation_config_json(&self) -> serde_json::Value {
        serde_json::json!({ "bos_token_id": self.bos_token_id, "eos_token_id": self.eos_token_ids })
    }

    pub fn q_dim(&self) -> usize {
        self.num_attention_heads * self.head_dim
    }
    pub fn kv_dim(&self) -> usize {
        self.num_key_value_heads * self.head_dim
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> serde_json::Value {
        crate::presets::preset("tiny").unwrap().to_hf_json()
    }

    #[test]
    fn roundtrip_through_hf_json() {
        let c = crate::presets::preset("qwen3-8b").unwrap();
        let back = ModelConfig::from_json(&c.to_hf_json(), Some(&c.generation_config_json())).unwrap();
        assert_eq!(back, c);
        assert!(c.to_hf_json().get("quantization_config").is_none());
        let fp8 = ModelConfig { quantization: Some(QuantConfig::fp8()), ..c };
        let back = ModelConfig::from_json(&fp8.to_hf_json(), None).unwrap();
        assert_eq!(back.quantization, Some(QuantConfig::fp8()));
    }

    #[test]
    fn bad_quantization_config_names_the_field() {
        let mut v = base();
        v["quantization_config"] = serde_json::json!({ "quant_method": "fp8",
            "activation_scheme": "static", "weight_block_size": [128, 128] });
        let err = ModelConfig::from_json(&v, None).unwrap_err().to_string();
        assert!(err.contains("quantization_config.activation_scheme") && err.contains("static"), "{err}");
    }

    #[test]
    fn sizes_whose_products_overflow_are_refused() {
        for (field, value) in [
            ("hidden_size", serde_json::json!(9_007_199_254_740_993u64)),
            ("head_dim", serde_json::json!(1u64 << 62)),
            ("vocab_size", serde_json::json!(1u64 << 60)),
        ] {
            let mut v = base();
            v[field] = value;
            let err = ModelConfig::from_json(&v, None).unwrap_err().to_string();
            assert!(err.contains("overflows"), "{field}: {err}");
        }
        // Many layers of small size overflow nothing, but listing their tensors would
        // exhaust memory before anything else refused them.
        for layers in [1u64 << 60, 100_000] {
            let mut v = base();
            v["num_hidden_layers"] = layers.into();
            let err = ModelConfig::from_json(&v, None).unwrap_err().to_string();
            assert!(err.contains("above 1024"), "{layers}: {err}");
        }
    }

    #[test]
    fn errors_name_the_field() {
        for (field, value) in [
            ("hidden_size", serde_json::json!(0)),
            ("num_key_value_heads", serde_json::json!(3)),
            ("model_type", serde_json::json!("llama")),
            ("rope_theta", serde_json::json!(0.5)),
            ("eos_token_id", serde_json::json!(10_000_000)),
            ("hidden_act", serde_json::json!("gelu")),
            ("attention_bias", serde_json::json!(true)),
            ("rope_scaling", serde_json::json!({ "rope_type": "yarn", "factor": 4.0 })),
        ] {
            let mut v = base();
            v[field] = value;
            let err = ModelConfig::from_json(&v, None).unwrap_err().to_string();
            assert!(err.contains(field), "{field}: {err}");
        }
        let mut v = base();
        v.as_object_mut().unwrap().remove("vocab_size");
        assert!(ModelConfig::from_json(&v, None).unwrap_err().to_string().contains("vocab_size"));
    }
}
