//! The `runs` table: what was asked for and where it is in its life.

use crate::DbError;
use bench_types::{RunProgress, RunSpec, RunStatus, RunView, SpecDecodeResult, Summary};
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgPool, Postgres, Transaction};

/// Inserts one queued run per spec (already validated), in one transaction.
pub async fn create(tx: &mut Transaction<'_, Postgres>, specs: &[RunSpec]) -> Result<Vec<i64>, DbError> {
    let mut ids = Vec::with_capacity(specs.len());
    for spec in specs {
        let id = sqlx::query_scalar!(
            "INSERT INTO runs (spec, label, target_description) VALUES ($1, $2, $3) RETURNING id",
            Json(spec) as _,
            spec.label,
            spec.target_description(),
        )
        .fetch_one(&mut **tx)
        .await?;
        ids.push(id);
    }
    Ok(ids)
}

/// A run as the queries read it; `run_list` builds its queries at run time and reads the
/// same row by column name.
#[derive(sqlx::FromRow)]
pub(crate) struct RunRow {
    id: i64,
    spec: Json<RunSpec>,
    status: String,
    target_description: String,
    created_at: DateTime<Utc>,
    started_at: Option<DateTime<Utc>>,
    finished_at: Option<DateTime<Utc>>,
    error: Option<String>,
    summary: Option<Json<Summary>>,
    progress: Option<Json<RunProgress>>,
    cancel_requested: bool,
    speculative: Option<Json<SpecDecodeResult>>,
    tags: Vec<String>,
    note: String,
    archived_at: Option<DateTime<Utc>>,
}

impl RunRow {
    pub(crate) fn into_view(self) -> Result<RunView, DbError> {
        let status = self
            .status
            .parse::<RunStatus>()
            .map_err(|e| DbError::Decode(serde::de::Error::custom(format!("run {}: {e}", self.id))))?;
        Ok(RunView {
            id: self.id,
            status,
            spec: self.spec.0,
            target_description: self.target_description,
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            error: self.error,
            summary: self.summary.map(|s| s.0),
            progress: self.progress.map(|p| p.0),
            cancel_requested: self.cancel_requested,
            speculative: self.speculative.map(|s| s.0),
            tags: self.tags,
            note: self.note,
            archived_at: self.archived_at,
        })
    }
}

pub async fn get(pool: &PgPool, id: i64) -> Result<Option<RunView>, DbError> {
    let row = sqlx::query_as!(
        RunRow,
        r#"SELECT r.id, r.spec AS "spec: Json<RunSpec>", r.status, r.target_description, r.created_at,
                  r.started_at, r.finished_at, r.error, res.summary AS "summary?: Json<Summary>",
                  r.progress AS "progress: Json<RunProgress>", r.cancel_requested,
                  res.speculative AS "speculative?: Json<SpecDecodeResult>",
                  r.tags, r.note, r.archived_at
           FROM runs r LEFT JOIN run_results res ON res.run_id = r.id
           WHERE r.id = $1"#,
        id
    )
    .fetch_optional(pool)
    .await?;
    row.map(RunRow::into_view).transpose()
}

/// Newest first; `before_id` pages backwards.
pub async fn list(pool: &PgPool, limit: i64, before_id: Option<i64>) -> Result<Vec<RunView>, DbError> {
    let rows = sqlx::query_as!(
        RunRow,
        r#"SELECT r.id, r.spec AS "spec: Json<RunSpec>", r.status, r.target_description, r.created_at,
                  r.started_at, r.finished_at, r.error, res.summary AS "summary?: Json<Summary>",
                  r.progress AS "progress: Json<RunProgress>", r.cancel_requested,
                  res.speculative AS "speculative?: Json<SpecDecodeResult>",
                  r.tags, r.note, r.archived_at
           FROM runs r LEFT JOIN run_results res ON res.run_id = r.id
           WHERE $2::BIGINT IS NULL OR r.id < $2
           ORDER BY r.id DESC
           LIMIT $1"#,
        limit,
        before_id
    )
    .fetch_all(pool)
    .await?;
    rows.into_iter().map(RunRow::into_view).collect()
}

/// The runs with these ids, in the order given; missing ids are skipped.
pub async fn get_many(pool: &PgPool, ids: &[i64]) -> Result<Vec<RunView>, DbError> {
    let rows = sqlx::query_as!(
        RunRow,
        r#"SELECT r.id, r.spec AS "spec: Json<RunSpec>", r.status, r.target_description, r.created_at,
                  r.started_at, r.finished_at, r.error, res.summary AS "summary?: Json<Summary>",
                  r.progress AS "progress: Json<RunProgress>", r.cancel_requested,
                  res.speculative AS "speculative?: Json<SpecDecodeResult>",
                  r.tags, r.note, r.archived_at
           FROM UNNEST($1::BIGINT[]) WITH ORDINALITY AS wanted(id, ord)
           JOIN runs r ON r.id = wanted.id
           LEFT JOIN run_results res ON res.run_id = r.id
           ORDER BY wanted.ord"#,
        ids
    )
    .fetch_all(pool)
    .await?;
    rows.into_iter().map(RunRow::into_view).collect()
}

/// Moves a run from `from` to `to`, stamping start/finish times; fails without change when
/// the run is not in `from` (so two workers cannot both finish the same run).
pub async fn transition(
    pool: &PgPool,
    id: i64,
    from: RunStatus,
    to: RunStatus,
    error: Option<&str>,
) -> Result<(), DbError> {
    let updated = sqlx::query!(
        r#"UPDATE runs SET status = $3, error = COALESCE($4, error),
               started_at = CASE WHEN $3 = 'running' THEN now() ELSE started_at END,
               finished_at = CASE WHEN $3 IN ('succeeded', 'failed', 'cancelled', 'interrupted') THEN now() ELSE finished_at END
           WHERE id = $1 AND status = $2"#,
        id,
        from.as_str(),
        to.as_str(),
        error
    )
    .execute(pool)
    .await?
    .rows_affected();
    if updated == 1 {
        return Ok(());
    }
    match status_of(pool, id).await? {
        None => Err(DbError::RunNotFound(id)),
        Some(s) => Err(DbError::WrongStatus { id, status: s, expected: from.as_str() }),
    }
}

pub(crate) async fn status_of<'e, E: sqlx::PgExecutor<'e>>(
    ex: E,
    id: i64,
) -> Result<Option<String>, DbError> {
    Ok(sqlx::query_scalar!("SELECT status FROM runs WHERE id = $1", id).fetch_optional(ex).await?)
}

/// How many runs are in each status (home page counters).
pub async fn count_by_status(pool: &PgPool) -> Result<Vec<(RunStatus, i64)>, DbError> {
    let rows = sqlx::query!(r#"SELECT status, COUNT(*) AS "n!" FROM runs GROUP BY status ORDER BY status"#)
        .fetch_all(pool)
        .await?;
    Ok(rows.into_iter().filter_map(|r| r.status.parse().ok().map(|s| (s, r.n))).collect())
}
