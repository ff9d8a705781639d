//! Engines latlab launches itself from typed options: vLLM, SGLang, TensorRT-LLM.
//! (Filled in by the runs issue: presets, validation, rendering to an argv.)

use crate::validate::ValidationErrors;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchedTarget {
    pub engine: LaunchedEngine,
    /// Model path or Hugging Face id passed to the engine.
    pub model: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchedEngine {
    Vllm,
    Sglang,
    TrtLlm,
}

impl LaunchedEngine {
    pub fn as_str(self) -> &'static str {
        match self {
            LaunchedEngine::Vllm => "vllm",
            LaunchedEngine::Sglang => "sglang",
            LaunchedEngine::TrtLlm => "trtllm",
        }
    }
}

impl LaunchedTarget {
    pub fn validate_into(&self, e: &mut ValidationErrors) {
        if self.model.trim().is_empty() {
            e.push("target.model", "is required");
        }
    }
}
