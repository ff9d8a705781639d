//! `quantization_config` of a Hugging Face config.json, as far as we support it: the
//! block-FP8 format of Qwen/Qwen3-8B-FP8 (and DeepSeek-V3):
//!
//! ```json
//! "quantization_config": { "quant_method": "fp8", "fmt": "e4m3",
//!     "activation_scheme": "dynamic", "weight_block_size": [128, 128] }
//! ```
//!
//! Anything else is refused with the field and the value named, rather than loaded wrongly.

use crate::error::{EngineError, Result};
use serde::{Deserialize, Serialize};

/// How the linear projections of a model are stored. Only block FP8 exists today; the
/// struct keeps HF's field names so that /v1/engine/info reads like the checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuantConfig {
    pub quant_method: QuantMethod,
    /// Activations are not quantized ahead of time; FP8 kernels may scale them per token.
    pub activation_scheme: ActivationScheme,
    /// (rows, cols) of one weight block sharing a scale.
    pub weight_block_size: [usize; 2],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuantMethod {
    /// float8_e4m3fn weights with one f32 scale per block.
    Fp8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActivationScheme {
    Dynamic,
}

/// Keys of `quantization_config` we read; others are refused unless harmless (see below).
const KNOWN: [&str; 4] = ["quant_method", "fmt", "activation_scheme", "weight_block_size"];

impl QuantConfig {
    /// Qwen3-8B-FP8's format: what `--quantization fp8` produces.
    pub fn fp8() -> Self {
        QuantConfig {
            quant_method: QuantMethod::Fp8,
            activation_scheme: ActivationScheme::Dynamic,
            weight_block_size: [crate::fp8::BLOCK, crate::fp8::BLOCK],
        }
    }

    /// The short name served as `quantization` ("fp8").
    pub fn name(&self) -> &'static str {
        match self.quant_method {
            QuantMethod::Fp8 => "fp8",
        }
    }

    /// Parse config.json's `quantization_config` (absent or null: None).
    pub fn from_hf(v: Option<&serde_json::Value>) -> Result<Option<Self>> {
        let obj = match v {
            None | Some(serde_json::Value::Null) => return Ok(None),
            Some(serde_json::Value::Object(o)) => o,
            Some(other) => {
                return Err(EngineError::config(
                    "quantization_config",
                    format!("must be an object, got {other}"),
                ));
            }
        };
        let field = |k: &str| format!("quantization_config.{k}");
        let str_of = |k: &str| obj.get(k).and_then(|v| v.as_str());
        match obj.get("quant_method") {
            Some(m) if m.as_str() == Some("fp8") => {}
            Some(m) => {
                return Err(EngineError::config(
                    &field("quant_method"),
                    format!("{m} unsupported, only \"fp8\""),
                ));
            }
            None => return Err(EngineError::config(&field("quant_method"), "missing")),
        }
        if let Some(f) = obj.get("fmt")
            && str_of("fmt") != Some("e4m3")
        {
            return Err(EngineError::config(
                &field("fmt"),
                format!("{f} unsupported, only \"e4m3\" (float8_e4m3fn)"),
            ));
        }
        // HF's FP8 loader defaults to dynamic; static would need activation scales we lack.
        if let Some(a) = obj.get("activation_scheme")
            && str_of("activation_scheme") != Some("dynamic")
        {
            return Err(EngineError::config(
                &field("activation_scheme"),
                format!("{a} unsupported, only \"dynamic\""),
            ));
        }
        let block = obj.get("weight_block_size");
        if block != Some(&serde_json::json!([128, 128])) {
            return Err(EngineError::config(
                &field("weight_block_size"),
                match block {
                    None => "missing (per-tensor FP8 is unsupported, only [128, 128] blocks)".to_string(),
                    Some(b) => format!("{b} unsupported, only [128, 128]"),
                },
            ));
        }
        for (k, v) in obj {
            if KNOWN.contains(&k.as_str()) || harmless_extra(k, v) {
                continue;
            }
            return Err(EngineError::config(&field(k), format!("{v} is not understood by this engine")));
        }
        Ok(Some(QuantConfig::fp8()))
    }

    /// `quantization_config` as Qwen3-8B-FP8's config.json writes it.
    pub fn to_hf_json(&self) -> serde_json::Value {
        serde_json::json!({
            "quant_method": self.name(),
            "fmt": "e4m3",
            "activation_scheme": "dynamic",
            "weight_block_size": self.weight_block_size,
        })
    }
}

/// Extra keys that do not change what we load: `modules_to_not_convert` naming only tensors
/// we keep unquantized anyway (lm_head, embeddings), and a null or empty list.
fn harmless_extra(key: &str, v: &serde_json::Value) -> bool {
    if key != "modules_to_not_convert" {
        return false;
    }
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Array(a) => {
            a.iter().all(|m| m.as_str().is_some_and(|m| m == "lm_head" || m.ends_with("embed_tokens")))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn qwen3_8b_fp8() -> serde_json::Value {
        json!({ "activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                "weight_block_size": [128, 128] })
    }

    #[test]
    fn parses_qwen3_8b_fp8_and_writes_it_back() {
        let q = QuantConfig::from_hf(Some(&qwen3_8b_fp8())).unwrap().unwrap();
        assert_eq!(q, QuantConfig::fp8());
        assert_eq!(q.to_hf_json(), qwen3_8b_fp8());
        assert_eq!(QuantConfig::from_hf(None).unwrap(), None);
        assert_eq!(QuantConfig::from_hf(Some(&json!(null))).unwrap(), None);
        let mut v = qwen3_8b_fp8();
        v["modules_to_not_convert"] = json!(["lm_head"]);
        assert!(QuantConfig::from_hf(Some(&v)).is_ok());
        v.as_object_mut().unwrap().remove("fmt");
        assert!(QuantConfig::from_hf(Some(&v)).is_ok(), "fmt is optional");
    }

    #[test]
    fn unsupported_settings_name_field_and_value() {
        for (key, value, shown) in [
            ("quant_method", json!("awq"), "awq"),
            ("fmt", json!("e5m2"), "e5m2"),
            ("activation_scheme", json!("static"), "static"),
            ("weight_block_size", json!([64, 64]), "64"),
            ("weight_block_size", json!(null), "null"),
            ("modules_to_not_convert", json!(["model.layers.0.mlp"]), "layers.0"),
            ("kv_cache_scheme", json!("fp8"), "fp8"),
        ] {
            let mut v = qwen3_8b_fp8();
            v[key] = value;
            let err = QuantConfig::from_hf(Some(&v)).unwrap_err().to_string();
            assert!(
                err.contains(&format!("quantization_config.{key}")) && err.contains(shown),
                "{key}: {err}"
            );
        }
        let mut v = qwen3_8b_fp8();
        v.as_object_mut().unwrap().remove("weight_block_size");
        let err = QuantConfig::from_hf(Some(&v)).unwrap_err().to_string();
        assert!(err.contains("weight_block_size") && err.contains("missing"), "{err}");
        let err = QuantConfig::from_hf(Some(&json!("fp8"))).unwrap_err().to_string();
        assert!(err.contains("quantization_config"), "{err}");
    }
}
