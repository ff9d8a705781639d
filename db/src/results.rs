//! The `run_results` table, and storing a whole `BenchReport` atomically.

use crate::{DbError, requests, runs};
use bench_types::{BenchReport, RunStatus};
use sqlx::PgPool;
use sqlx::types::Json;

/// How a run with a report ended: `succeeded`; `failed` when every request failed or a
/// limit stopped it; `cancelled` with the requests that finished before the cancel.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEnd {
    pub status: RunStatus,
    /// Shown on the run's page: why it failed, or what to know (some requests failed).
    pub note: Option<String>,
}

/// Stores a finished run in ONE transaction: summary row, every request record, and the
/// status change `running -> end.status`. Either all of it lands or none of it does, so a
/// worker that dies mid-write leaves no half result.
pub async fn store_report(
    pool: &PgPool,
    run_id: i64,
    report: &BenchReport,
    end: &RunEnd,
) -> Result<(), DbError> {
    let mut tx = pool.begin().await?;
    // Lock the run row so a concurrent cancel/interrupt cannot interleave with the write.
    let status = sqlx::query_scalar!("SELECT status FROM runs WHERE id = $1 FOR UPDATE", run_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(DbError::RunNotFound(run_id))?;
    if status != RunStatus::Running.as_str() {
        return Err(DbError::WrongStatus { id: run_id, status, expected: "running" });
    }
    let s = &report.summary;
    sqlx::query!(
        r#"INSERT INTO run_results (run_id, summary, target_info, notes, bench_started_at, completed, failed,
                                    duration_s, output_throughput, mean_ttft_ms, mean_tpot_ms,
                                    speculative, mean_accepted_length)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"#,
        run_id,
        Json(s) as _,
        Json(&report.target_info) as _,
        Json(&report.notes) as _,
        report.started_at,
        s.completed as i32,
        s.failed as i32,
        s.duration_s,
        s.output_throughput,
        s.ttft.mean_ms,
        s.tpot.mean_ms,
        report.speculative.as_ref().map(Json) as _,
        report.speculative.as_ref().and_then(|x| x.mean_accepted_length),
    )
    .execute(&mut *tx)
    .await?;
    requests::insert_all(&mut tx, run_id, &report.requests).await?;
    sqlx::query!(
        "UPDATE runs SET status = $2, finished_at = now(), error = $3 WHERE id = $1",
        run_id,
        end.status.as_str(),
        end.note.as_deref()
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Target self-description and notes stored with a result.
pub struct ResultExtras {
    pub target_info: serde_json::Value,
    pub notes: Vec<String>,
}

pub async fn extras(pool: &PgPool, run_id: i64) -> Result<Option<ResultExtras>, DbError> {
    if runs::status_of(pool, run_id).await?.is_none() {
        return Err(DbError::RunNotFound(run_id));
    }
    let row = sqlx::query!(
        r#"SELECT target_info, notes AS "notes: Json<Vec<String>>" FROM run_results WHERE run_id = $1"#,
        run_id
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|r| ResultExtras { target_info: r.target_info, notes: r.notes.0 }))
}
