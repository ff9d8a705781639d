//! What the server functions need from storage, as a trait: `app` stays free of SQL (the
//! `server` crate implements it over `db`) and reaches it through Leptos context, never a
//! global.

use bench_types::run_list::{RunListPage, RunListQuery};
use bench_types::telemetry::{RunTelemetry, Series, TelemetryPoint};
use bench_types::{
    ComparisonRef, ComparisonSummary, ComparisonView, CreatedRuns, RequestRecord, RunSpec, RunView,
    ValidationErrors,
};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub enum StoreError {
    /// The input was refused; nothing was stored.
    Invalid(ValidationErrors),
    /// Anything else (database down...); the message is safe to show.
    Internal(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Invalid(e) => write!(f, "invalid input: {e}"),
            StoreError::Internal(m) => f.write_str(m),
        }
    }
}

#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    async fn recent_runs(&self, limit: i64, before_id: Option<i64>) -> Result<Vec<RunView>, StoreError>;
    /// The runs list's page for these filters, sort and page, with the count of matches.
    async fn list_runs(&self, _q: RunListQuery) -> Result<RunListPage, StoreError> {
        Ok(RunListPage { runs: Vec::new(), total: 0 })
    }
    async fn run(&self, id: i64) -> Result<Option<RunView>, StoreError>;
    /// Validates every spec, then stores one queued run per spec and sweep value (and a
    /// comparison when that makes more than one run).
    async fn create_runs(&self, specs: Vec<RunSpec>) -> Result<CreatedRuns, StoreError>;
    async fn comparison(&self, slug: &str) -> Result<Option<ComparisonView>, StoreError>;
    /// Comparisons newest first (older than `before`, a slug, when given); `only` picks one.
    async fn comparisons(
        &self,
        limit: i64,
        before: Option<String>,
        only: Option<String>,
    ) -> Result<Vec<ComparisonSummary>, StoreError>;
    /// The comparisons a run belongs to.
    async fn comparisons_of_run(&self, id: i64) -> Result<Vec<ComparisonRef>, StoreError>;
    /// Per-request records of these runs (for latency CDFs); runs without any are left out.
    async fn run_requests(&self, _ids: Vec<i64>) -> Result<Vec<(i64, Vec<RequestRecord>)>, StoreError> {
        Ok(Vec::new())
    }
    /// What the target and its GPUs said about themselves while the run went.
    async fn run_telemetry(&self, _id: i64) -> Result<RunTelemetry, StoreError> {
        Ok(RunTelemetry::default())
    }
    /// One telemetry series of several runs; runs without it are left out.
    async fn telemetry_series(
        &self,
        _ids: Vec<i64>,
        _series: Series,
    ) -> Result<Vec<(i64, Vec<TelemetryPoint>)>, StoreError> {
        Ok(Vec::new())
    }
    /// "cancelled", "requested" or "already finished".
    async fn cancel_run(&self, id: i64) -> Result<String, StoreError>;
    /// The tail of the engine's log, when the run started one.
    async fn run_log(&self, id: i64) -> Result<Option<String>, StoreError>;
}

/// How server functions find the store: provided as context by the server.
pub type SharedStore = Arc<dyn Store>;
