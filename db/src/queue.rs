//! The run queue on Postgres: workers (in `latlab` or `latlab worker` on other hosts)
//! claim queued runs with `FOR UPDATE SKIP LOCKED`, hold them under a lease they renew
//! with heartbeats, and lose them when the lease expires (the run becomes `interrupted`).

use crate::DbError;
use bench_types::RunProgress;
use sqlx::PgPool;
use sqlx::types::Json;

/// Claims the oldest queued run (never an imported one) for `worker`, or returns None.
/// Concurrent claimers skip each other's locked rows, so each run goes to one worker.
pub async fn claim(pool: &PgPool, worker: &str, lease_s: f64) -> Result<Option<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"UPDATE runs SET status = 'running', worker_id = $1, started_at = now(), heartbeat_at = now(),
                  lease_expires_at = now() + make_interval(secs => $2), progress = NULL
           WHERE id = (SELECT id FROM runs
                       WHERE status = 'queued' AND spec->'target'->>'kind' IS DISTINCT FROM 'imported'
                       ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1)
           RETURNING id"#,
        worker,
        lease_s
    )
    .fetch_optional(pool)
    .await?)
}

/// What a heartbeat learns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// Still ours; keep going.
    Held,
    /// Still ours, but someone asked to cancel: stop and report `cancelled`.
    CancelRequested,
    /// No longer ours (expired and marked interrupted, or finished elsewhere): stop and
    /// write nothing.
    Lost,
}

/// Renews the lease and publishes progress.
pub async fn heartbeat(
    pool: &PgPool,
    run_id: i64,
    worker: &str,
    lease_s: f64,
    progress: &RunProgress,
) -> Result<Lease, DbError> {
    let row = sqlx::query_scalar!(
        r#"UPDATE runs SET heartbeat_at = now(), lease_expires_at = now() + make_interval(secs => $3), progress = $4
           WHERE id = $1 AND worker_id = $2 AND status = 'running'
           RETURNING cancel_requested"#,
        run_id,
        worker,
        lease_s,
        Json(progress) as _
    )
    .fetch_optional(pool)
    .await?;
    Ok(match row {
        None => Lease::Lost,
        Some(true) => Lease::CancelRequested,
        Some(false) => Lease::Held,
    })
}

/// Marks every running run whose lease has expired as interrupted, naming the worker
/// that vanished. Any worker may call this; returns the ids it interrupted.
pub async fn expire_leases(pool: &PgPool) -> Result<Vec<i64>, DbError> {
    Ok(sqlx::query_scalar!(
        r#"UPDATE runs SET status = 'interrupted', finished_at = now(),
                  error = format('worker %s stopped sending heartbeats; its lease expired at %s',
                                 COALESCE(worker_id, '?'), to_char(lease_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'))
           WHERE status = 'running' AND lease_expires_at < now()
           RETURNING id"#
    )
    .fetch_all(pool)
    .await?)
}

/// Ends a run this worker holds with `failed` or `cancelled` (success goes through
/// `results::store_report`). Returns false when the run was no longer ours.
pub async fn finish(
    pool: &PgPool,
    run_id: i64,
    worker: &str,
    status: bench_types::RunStatus,
    error: &str,
) -> Result<bool, DbError> {
    let n = sqlx::query!(
        r#"UPDATE runs SET status = $3, error = $4, finished_at = now()
           WHERE id = $1 AND worker_id = $2 AND status = 'running'"#,
        run_id,
        worker,
        status.as_str(),
        error
    )
    .execute(pool)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// What a cancel request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// It was queued: cancelled at once.
    Cancelled,
    /// It is running: its worker stops at its next heartbeat.
    Requested,
    /// It had already finished; nothing changed.
    AlreadyFinished,
}

pub async fn request_cancel(pool: &PgPool, run_id: i64) -> Result<CancelOutcome, DbError> {
    let mut tx = pool.begin().await?;
    let status = sqlx::query_scalar!("SELECT status FROM runs WHERE id = $1 FOR UPDATE", run_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(DbError::RunNotFound(run_id))?;
    let outcome = match status.as_str() {
        "queued" => {
            sqlx::query!(
                "UPDATE runs SET status = 'cancelled', finished_at = now(), error = 'cancelled before it started' WHERE id = $1",
                run_id
            )
            .execute(&mut *tx)
            .await?;
            CancelOutcome::Cancelled
        }
        "running" => {
            sqlx::query!("UPDATE runs SET cancel_requested = true WHERE id = $1", run_id)
                .execute(&mut *tx)
                .await?;
            CancelOutcome::Requested
        }
        _ => CancelOutcome::AlreadyFinished,
    };
    tx.commit().await?;
    Ok(outcome)
}

/// Keeps the last part of the engine's log for the run page.
pub async fn save_log(pool: &PgPool, run_id: i64, log: &str) -> Result<(), DbError> {
    sqlx::query!(
        r#"INSERT INTO run_logs (run_id, log) VALUES ($1, $2)
           ON CONFLICT (run_id) DO UPDATE SET log = EXCLUDED.log, updated_at = now()"#,
        run_id,
        log
    )
    .execute(pool)
    .await?;
    Ok(())
}

pub async fn log(pool: &PgPool, run_id: i64) -> Result<Option<String>, DbError> {
    Ok(sqlx::query_scalar!("SELECT log FROM run_logs WHERE run_id = $1", run_id).fetch_optional(pool).await?)
}
