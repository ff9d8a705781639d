//! An import as the API receives it (a source file plus the configuration it ran with) and
//! the runs it becomes: `RunSpec` with `Target::Imported`, the `Summary`, any records.

use crate::{ImportError, Parsed, text_block, vllm_json};
use bench_types::imported::ImportedTarget;
use bench_types::{Dataset, LoadProfile, RequestRecord, RunSpec, Sampling, Summary, Target};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportFormat {
    /// `vllm bench serve --save-result` JSON (an object).
    VllmJson,
    /// One or more printed "Serving Benchmark Result" blocks (a string).
    Text,
}

/// The configuration an imported result ran with; only `engine` is required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportConfig {
    pub engine: String,
    /// Needed when the source does not name the model (text blocks).
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub label: String,
    /// Where the numbers come from; default "upload".
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub engine_version: Option<String>,
    #[serde(default)]
    pub hardware: Option<String>,
    #[serde(default)]
    pub optimization: Option<String>,
    #[serde(default)]
    pub variant: Option<String>,
    /// Default: ShareGPT (what `vllm bench serve` uses unless told otherwise).
    #[serde(default)]
    pub dataset: Option<Dataset>,
    #[serde(default)]
    pub num_prompts: Option<u32>,
    #[serde(default)]
    pub sampling: Option<Sampling>,
}

/// Body of `POST /api/imports`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    pub format: ImportFormat,
    /// The vLLM JSON object, or the text with the block(s).
    pub content: serde_json::Value,
    pub config: ImportConfig,
    /// When set (or when the text has several blocks), the runs are grouped in a comparison.
    #[serde(default)]
    pub comparison_title: Option<String>,
}

/// One run ready to store: what `db::imports` writes and the seed data file holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedRun {
    pub spec: RunSpec,
    pub summary: Summary,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<RequestRecord>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl ImportRequest {
    /// Parses the content and attaches the configuration; every run is validated like a
    /// `RunSpec` from the form. Any problem fails the whole import.
    pub fn into_runs(&self) -> Result<Vec<ImportedRun>, ImportError> {
        let parsed: Vec<Parsed> = match self.format {
            ImportFormat::VllmJson => vec![vllm_json::parse(&self.content)?],
            ImportFormat::Text => {
                let text = self
                    .content
                    .as_str()
                    .ok_or_else(|| ImportError::new("content: a text import must be a string"))?;
                text_block::parse_blocks(text)?.into_iter().map(|(_, p)| p).collect()
            }
        };
        parsed.into_iter().map(|p| build_run(p, &self.config)).collect()
    }
}

/// A `Parsed` result with its configuration, validated.
pub fn build_run(p: Parsed, c: &ImportConfig) -> Result<ImportedRun, ImportError> {
    let model =
        c.model.clone().or(p.model.clone()).ok_or_else(|| {
            ImportError::new("config.model: is required (the source does not name the model)")
        })?;
    let target = ImportedTarget {
        engine: c.engine.clone(),
        source: c.source.clone().unwrap_or_else(|| "upload".to_string()),
        command: c.command.clone(),
        engine_version: c.engine_version.clone(),
        hardware: c.hardware.clone(),
        optimization: c.optimization.clone(),
        variant: c.variant.clone(),
        missing: p.missing,
    };
    let s = &p.summary;
    // Built through serde so that fields added to `RunSpec` later (with their defaults)
    // need no change here.
    let spec_json = serde_json::json!({
        "label": c.label,
        "target": { "kind": "imported" },
        "model": model,
        "dataset": c.dataset.clone().unwrap_or(Dataset::Sharegpt { path: None, output_len: None }),
        // Saturating: counts near u32::MAX then fail validation instead of overflowing.
        "num_prompts": c.num_prompts.or(p.num_prompts).unwrap_or_else(|| s.completed.saturating_add(s.failed)),
        "load": LoadProfile { max_concurrency: s.max_concurrency.into_iter().collect(), request_rate: s.request_rate, request_rates: vec![], burstiness: 1.0 },
        "sampling": c.sampling.clone().unwrap_or_default(),
        "percentiles": s.ttft.percentiles.iter().map(|(p, _)| *p).collect::<Vec<f64>>(),
    });
    let mut spec_json = spec_json;
    spec_json["target"] =
        serde_json::to_value(Target::Imported(target)).map_err(|e| ImportError::new(e.to_string()))?;
    let spec: RunSpec =
        serde_json::from_value(spec_json).map_err(|e| ImportError::new(format!("config: {e}")))?;
    spec.validate().map_err(|e| ImportError::new(format!("config: {e}")))?;
    let mut notes = Vec::new();
    if s.peak_concurrent_requests > 0 {
        notes.push(
            "Peak concurrent requests as the source printed it (vLLM v0.11 counts per-second buckets and over-counts)."
                .to_string(),
        );
    }
    Ok(ImportedRun { spec, summary: p.summary, requests: p.requests, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_counts_are_refused_not_overflowed() {
        let summary = Summary { completed: u32::MAX, failed: 1, ..Summary::default() };
        let p =
            Parsed { summary, missing: vec![], requests: vec![], model: Some("m".into()), num_prompts: None };
        let c = ImportConfig { engine: "vLLM".into(), ..ImportConfig::default() };
        let e = build_run(p.clone(), &c).unwrap_err().to_string();
        assert!(e.contains("num_prompts"), "{e}");
        let c = ImportConfig { num_prompts: Some(10), ..c };
        assert!(build_run(p, &c).is_ok());
    }
}
