//! Shapes the JSON API and the pages exchange about stored runs and comparisons.

use crate::report::Summary;
use crate::spec::RunSpec;
use crate::status::RunStatus;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A stored run, as lists and the detail page show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    pub id: i64,
    pub status: RunStatus,
    pub spec: RunSpec,
    pub target_description: String,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
    /// Present once the run succeeded.
    pub summary: Option<Summary>,
    /// Live progress published by the worker while the run goes (kept after it ends).
    #[serde(default)]
    pub progress: Option<RunProgress>,
    /// A cancel was asked for and the worker has not yet stopped.
    #[serde(default)]
    pub cancel_requested: bool,
    /// Speculative decoding's numbers, for a run whose engine speculated (stored with its
    /// result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<crate::spec_decode::SpecDecodeResult>,
    /// Tags (lower case) a person gave the run; the runs list filters on them.
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub note: String,
    /// When the run was archived (hidden from the runs list by default); `None`: it is not.
    #[serde(default)]
    pub archived_at: Option<DateTime<Utc>>,
}

/// What a worker publishes about a running benchmark, about once a second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunProgress {
    /// `starting engine`, `preparing`, `warmup`, `measuring`, `storing`, `finished`.
    pub phase: String,
    pub completed: u32,
    pub failed: u32,
    pub total: u32,
    pub elapsed_s: f64,
    /// Mean TTFT / TPOT over the last completed requests.
    #[serde(default)]
    pub rolling_ttft_ms: Option<f64>,
    #[serde(default)]
    pub rolling_tpot_ms: Option<f64>,
    /// Which worker runs it.
    #[serde(default)]
    pub worker: String,
}

/// Answer to `POST /api/runs`: the runs created (one per sweep value) and, for a sweep,
/// the comparison that groups them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreatedRuns {
    pub run_ids: Vec<i64>,
    pub comparison_slug: Option<String>,
}

/// Body of `POST /api/comparisons`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewComparison {
    pub title: String,
    pub run_ids: Vec<i64>,
    /// View settings (metric, percentile, baseline...) kept verbatim for the permalink.
    #[serde(default)]
    pub view: serde_json::Value,
}

impl NewComparison {
    pub fn validate(&self) -> Result<(), crate::ValidationErrors> {
        let mut e = crate::ValidationErrors::default();
        if self.title.trim().is_empty() {
            e.push("title", "is required");
        } else if self.title.len() > 200 {
            e.push("title", "must be at most 200 characters");
        } else {
            crate::validate::check_text(&mut e, "title", &self.title, false);
        }
        if self.run_ids.is_empty() {
            e.push("run_ids", "name at least one run");
        } else if self.run_ids.len() > 64 {
            e.push("run_ids", "at most 64 runs");
        } else if (1..self.run_ids.len()).any(|i| self.run_ids[..i].contains(&self.run_ids[i])) {
            e.push("run_ids", "runs must not repeat");
        }
        if !(self.view.is_null() || self.view.is_object()) {
            e.push("view", "must be a JSON object");
        }
        crate::text::check_json(&mut e, "view", &self.view);
        e.into_result()
    }
}

/// The permalink of the seed study (Qwen3-8B on one H100), the reference comparison latlab
/// loads on first start.
pub const REFERENCE_SLUG: &str = "qwen3-8b-h100-gpustack";

/// A comparison as the comparisons index lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonSummary {
    pub slug: String,
    pub title: String,
    pub created_at: DateTime<Utc>,
    pub runs: i64,
    /// Distinct targets of its runs ("native random:tiny", "imported vLLM", ...), sorted.
    pub engines: Vec<String>,
    /// Runs not yet finished (queued or running).
    #[serde(default)]
    pub live: i64,
}

/// A comparison a run belongs to (the run page's backlinks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRef {
    pub slug: String,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonView {
    pub slug: String,
    pub title: String,
    pub created_at: DateTime<Utc>,
    pub view: serde_json::Value,
    /// The runs in the order the comparison lists them.
    pub runs: Vec<RunView>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub note: String,
}
