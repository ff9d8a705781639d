//! Results latlab did not measure itself but imported (vLLM `--save-result` JSON, or a
//! printed "Serving Benchmark Result" block), with the configuration they came with.
//! Such a run is never executed by a worker; the UI marks it "imported" wherever it shows.

use crate::validate::{ValidationErrors, limits};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedTarget {
    /// Engine that produced the numbers, e.g. "vLLM", "SGLang".
    pub engine: String,
    /// Where the numbers come from (a file name, a document and section).
    pub source: String,
    /// The command that started the server, as published (effective flags of this run).
    #[serde(default)]
    pub command: Option<String>,
    /// Engine version, e.g. "v0.11.0".
    #[serde(default)]
    pub engine_version: Option<String>,
    /// Hardware the numbers were measured on, e.g. "1x NVIDIA H100 SXM".
    #[serde(default)]
    pub hardware: Option<String>,
    /// The optimization step this run belongs to in its study, e.g. "3. 量子化".
    #[serde(default)]
    pub optimization: Option<String>,
    /// The note printed above the block in the source (e.g. "# triton", "# BS=4").
    #[serde(default)]
    pub variant: Option<String>,
    /// Summary fields the source did not carry (e.g. `e2el`, `ttft.std`, `ttft.p50`): they
    /// hold defaults in the stored `Summary` and the UI shows them as missing, never as 0.
    /// Keys are a metric key, or `<metric>.std`, or `<metric>.p<N>`, or a summary field name.
    #[serde(default)]
    pub missing: Vec<String>,
}

impl ImportedTarget {
    pub fn new(engine: impl Into<String>, source: impl Into<String>) -> Self {
        ImportedTarget {
            engine: engine.into(),
            source: source.into(),
            command: None,
            engine_version: None,
            hardware: None,
            optimization: None,
            variant: None,
            missing: Vec::new(),
        }
    }

    /// Whether the source lacked `key` (see `missing`).
    pub fn lacks(&self, key: &str) -> bool {
        self.missing.iter().any(|m| m == key)
    }

    pub fn validate_into(&self, e: &mut ValidationErrors) {
        if self.engine.trim().is_empty() {
            e.push("target.engine", "is required");
        }
        let texts = [
            ("target.engine", Some(&self.engine)),
            ("target.hardware", self.hardware.as_ref()),
            ("target.engine_version", self.engine_version.as_ref()),
            ("target.optimization", self.optimization.as_ref()),
            ("target.variant", self.variant.as_ref()),
        ];
        for (field, t) in texts {
            if t.is_some_and(|t| t.len() > limits::MAX_TEXT) {
                e.push(field, format!("must be at most {} characters", limits::MAX_TEXT));
            } else if let Some(t) = t {
                crate::text::check_chars(e, field, t);
            }
        }
        // Commands and sources can be long (multi-line launch scripts) but not unbounded.
        for (field, t) in [("target.source", Some(&self.source)), ("target.command", self.command.as_ref())] {
            if t.is_some_and(|t| t.len() > 8 * limits::MAX_TEXT) {
                e.push(field, format!("must be at most {} characters", 8 * limits::MAX_TEXT));
            } else if let Some(t) = t {
                crate::text::check_chars(e, field, t);
            }
        }
        for (i, m) in self.missing.iter().enumerate() {
            crate::text::check_chars(e, &format!("target.missing[{i}]"), m);
        }
    }
}
