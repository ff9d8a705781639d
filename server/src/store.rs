//! `app::store::Store` over the `db` crate: the one place where creating runs is decided
//! (validate, expand a sweep, store runs and their comparison in one transaction), used by
//! both the pages' server functions and the JSON API.

use app::store::{Store, StoreError};
use bench_types::telemetry::{RunTelemetry, Series, TelemetryPoint};
use bench_types::{
    ComparisonRef, ComparisonSummary, ComparisonView, CreatedRuns, NewComparison, RunSpec, RunView,
    ValidationErrors,
};
use db::{DbError, PgPool};

#[derive(Clone)]
pub struct DbStore {
    pub pool: PgPool,
}

/// A database failure as pages see it: a reference into the log, never the error itself.
fn internal(e: DbError) -> StoreError {
    let reference = rand::random::<u32>();
    tracing::error!(reference = format!("{reference:08x}"), error = %e, "database error");
    StoreError::Internal(format!("internal error (reference {reference:08x} in the server's log)"))
}

/// Validates and stores `spec`: one run per sweep value and, for a sweep, a comparison
/// grouping them. All in one transaction: a failure stores nothing.
pub async fn create_runs(pool: &PgPool, spec: RunSpec) -> Result<CreatedRuns, StoreError> {
    create_run_set(pool, vec![spec]).await
}

/// Several specs from one form (e.g. a list of engine presets), each expanded over its
/// concurrency values; more than one run in all makes one comparison of them. Every spec
/// is validated before anything is written.
pub async fn create_run_set(pool: &PgPool, specs: Vec<RunSpec>) -> Result<CreatedRuns, StoreError> {
    let Some(first) = specs.first().cloned() else {
        let mut e = ValidationErrors::default();
        e.push("target", "nothing to run");
        return Err(StoreError::Invalid(e));
    };
    for spec in &specs {
        spec.validate().map_err(StoreError::Invalid)?;
        if matches!(spec.target, bench_types::Target::Imported(_)) {
            let mut e = ValidationErrors::default();
            e.push(
                "target.kind",
                "imported results are not run: send them to POST /api/imports (or the import page)",
            );
            return Err(StoreError::Invalid(e));
        }
    }
    let expanded: Vec<RunSpec> = specs.iter().flat_map(RunSpec::expand).collect();
    let mut tx = pool.begin().await.map_err(|e| internal(e.into()))?;
    let run_ids = db::runs::create(&mut tx, &expanded).await.map_err(internal)?;
    let comparison_slug = if run_ids.len() > 1 {
        let title = if !first.label.is_empty() && specs.len() == 1 {
            first.label.clone()
        } else if specs.len() > 1 {
            let targets: Vec<String> = specs.iter().map(RunSpec::target_description).collect();
            format!("{}: {} — {}", first.model, targets.join(" vs "), first.load_label())
        } else {
            format!("{} on {} — {}", first.model, first.target_description(), first.load_label())
        };
        let title: String = title.chars().take(200).collect();
        let new = NewComparison { title, run_ids: run_ids.clone(), view: serde_json::json!({}) };
        Some(db::comparisons::create(&mut tx, &new).await.map_err(internal)?)
    } else {
        None
    };
    tx.commit().await.map_err(|e| internal(e.into()))?;
    tracing::info!(?run_ids, ?comparison_slug, "runs created");
    Ok(CreatedRuns { run_ids, comparison_slug })
}

/// Validates and stores a comparison of existing runs.
pub async fn create_comparison(pool: &PgPool, new: NewComparison) -> Result<String, StoreError> {
    new.validate().map_err(StoreError::Invalid)?;
    let mut tx = pool.begin().await.map_err(|e| internal(e.into()))?;
    let slug = match db::comparisons::create(&mut tx, &new).await {
        Ok(s) => s,
        Err(DbError::RunNotFound(id)) => {
            let mut e = ValidationErrors::default();
            e.push("run_ids", format!("there is no run {id}"));
            return Err(StoreError::Invalid(e));
        }
        Err(e) => return Err(internal(e)),
    };
    tx.commit().await.map_err(|e| internal(e.into()))?;
    Ok(slug)
}

/// "cancelled" (it was queued), "requested" (its worker stops at the next heartbeat) or
/// "already finished".
pub async fn cancel_run(pool: &PgPool, id: i64) -> Result<&'static str, StoreError> {
    use db::queue::CancelOutcome;
    match db::queue::request_cancel(pool, id).await {
        Ok(CancelOutcome::Cancelled) => Ok("cancelled"),
        Ok(CancelOutcome::Requested) => Ok("requested"),
        Ok(CancelOutcome::AlreadyFinished) => Ok("already finished"),
        Err(DbError::RunNotFound(id)) => {
            let mut e = ValidationErrors::default();
            e.push("id", format!("there is no run {id}"));
            Err(StoreError::Invalid(e))
        }
        Err(e) => Err(internal(e)),
    }
}

#[async_trait::async_trait]
impl Store for DbStore {
    async fn cancel_run(&self, id: i64) -> Result<String, StoreError> {
        cancel_run(&self.pool, id).await.map(str::to_string)
    }
    async fn run_log(&self, id: i64) -> Result<Option<String>, StoreError> {
        db::queue::log(&self.pool, id).await.map_err(internal)
    }
    async fn recent_runs(&self, limit: i64, before_id: Option<i64>) -> Result<Vec<RunView>, StoreError> {
        db::runs::list(&self.pool, limit, before_id).await.map_err(internal)
    }
    async fn list_runs(
        &self,
        q: bench_types::RunListQuery,
    ) -> Result<bench_types::run_list::RunListPage, StoreError> {
        db::run_list::list(&self.pool, &q).await.map_err(internal)
    }
    async fn run(&self, id: i64) -> Result<Option<RunView>, StoreError> {
        db::runs::get(&self.pool, id).await.map_err(internal)
    }
    async fn create_runs(&self, specs: Vec<RunSpec>) -> Result<CreatedRuns, StoreError> {
        create_run_set(&self.pool, specs).await
    }
    async fn comparison(&self, slug: &str) -> Result<Option<ComparisonView>, StoreError> {
        db::comparisons::get(&self.pool, slug).await.map_err(internal)
    }
    async fn comparisons(
        &self,
        limit: i64,
        before: Option<String>,
        only: Option<String>,
    ) -> Result<Vec<ComparisonSummary>, StoreError> {
        db::comparisons::list(&self.pool, limit, before.as_deref(), only.as_deref()).await.map_err(internal)
    }
    async fn run_telemetry(&self, id: i64) -> Result<RunTelemetry, StoreError> {
        db::telemetry::for_run(&self.pool, id).await.map_err(internal)
    }
    async fn telemetry_series(
        &self,
        ids: Vec<i64>,
        series: Series,
    ) -> Result<Vec<(i64, Vec<TelemetryPoint>)>, StoreError> {
        db::telemetry::series_of_runs(&self.pool, &ids, series).await.map_err(internal)
    }
    async fn comparisons_of_run(&self, id: i64) -> Result<Vec<ComparisonRef>, StoreError> {
        db::comparisons::of_run(&self.pool, id).await.map_err(internal)
    }
    async fn run_requests(
        &self,
        ids: Vec<i64>,
    ) -> Result<Vec<(i64, Vec<bench_types::RequestRecord>)>, StoreError> {
        crate::api::exports::records_of(&self.pool, &ids).await.map_err(internal)
    }
}
