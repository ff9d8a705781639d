//! The `telemetry_samples` and `run_telemetry` tables: what the target and the worker's
//! GPUs said about themselves while a run went (bench_types::telemetry).

use crate::DbError;
use bench_types::telemetry::{RunTelemetry, Series, TelemetryPoint};
use chrono::{DateTime, Utc};
use sqlx::PgPool;

/// One sample as the worker took it, at wall-clock time `at`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSample {
    pub series: Series,
    pub gpu: Option<u32>,
    pub at: DateTime<Utc>,
    pub value: f64,
}

/// Marks `run_id` as sampled, with no notes yet, and drops any samples an earlier attempt
/// left, so that the batches that follow (`append`) are the run's whole telemetry and a
/// worker that dies mid-run still leaves them readable.
pub async fn begin(pool: &PgPool, run_id: i64) -> Result<(), DbError> {
    let mut tx = pool.begin().await?;
    sqlx::query!("DELETE FROM telemetry_samples WHERE run_id = $1", run_id).execute(&mut *tx).await?;
    upsert_notes(&mut *tx, run_id, &[]).await?;
    tx.commit().await?;
    Ok(())
}

/// Adds one batch of a run's samples, all or none.
pub async fn append(pool: &PgPool, run_id: i64, samples: &[NewSample]) -> Result<(), DbError> {
    let mut tx = pool.begin().await?;
    for chunk in samples.chunks(10_000) {
        let series: Vec<String> = chunk.iter().map(|s| s.series.as_str().to_string()).collect();
        let gpu: Vec<Option<i32>> = chunk.iter().map(|s| s.gpu.map(|g| g as i32)).collect();
        let at: Vec<DateTime<Utc>> = chunk.iter().map(|s| s.at).collect();
        let value: Vec<f64> = chunk.iter().map(|s| s.value).collect();
        sqlx::query!(
            r#"INSERT INTO telemetry_samples (run_id, series, gpu, at, value)
               SELECT $1, t.series, t.gpu, t.at, t.value
               FROM UNNEST($2::TEXT[], $3::INT4[], $4::TIMESTAMPTZ[], $5::FLOAT8[]) AS t(series, gpu, at, value)"#,
            run_id,
            &series,
            &gpu as &[Option<i32>],
            &at,
            &value,
        )
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// What could not be sampled, once sampling has ended; replaces earlier notes.
pub async fn set_notes(pool: &PgPool, run_id: i64, notes: &[String]) -> Result<(), DbError> {
    upsert_notes(pool, run_id, notes).await
}

async fn upsert_notes(ex: impl sqlx::PgExecutor<'_>, run_id: i64, notes: &[String]) -> Result<(), DbError> {
    sqlx::query!(
        "INSERT INTO run_telemetry (run_id, notes) VALUES ($1, $2)
         ON CONFLICT (run_id) DO UPDATE SET notes = EXCLUDED.notes",
        run_id,
        notes,
    )
    .execute(ex)
    .await?;
    Ok(())
}

struct Row {
    run_id: i64,
    series: String,
    gpu: Option<i32>,
    t_s: f64,
    value: f64,
}

/// A row as pages read it; a series this build does not know (a newer worker wrote it)
/// is skipped rather than failing the page.
fn point(r: &Row) -> Option<TelemetryPoint> {
    Some(TelemetryPoint {
        series: Series::parse(&r.series)?,
        gpu: r.gpu.and_then(|g| u32::try_from(g).ok()),
        t_s: r.t_s,
        value: r.value,
    })
}

/// The samples of `ids` (of one series, when given), times in seconds since each run's
/// measured start (its bench's start; the run's claim when it stored no result), in time
/// order per run and series.
async fn rows(pool: &PgPool, ids: &[i64], series: Option<Series>) -> Result<Vec<Row>, DbError> {
    Ok(sqlx::query_as!(
        Row,
        r#"SELECT s.run_id, s.series, s.gpu,
                  EXTRACT(EPOCH FROM s.at - COALESCE(rr.bench_started_at, r.started_at, s.at))::FLOAT8 AS "t_s!",
                  s.value
           FROM telemetry_samples s
           JOIN runs r ON r.id = s.run_id
           LEFT JOIN run_results rr ON rr.run_id = s.run_id
           WHERE s.run_id = ANY($1) AND ($2::TEXT IS NULL OR s.series = $2)
           ORDER BY s.run_id, s.series, s.gpu NULLS FIRST, s.at"#,
        ids,
        series.map(Series::as_str),
    )
    .fetch_all(pool)
    .await?)
}

/// A run's telemetry; `collected` is false when it has none stored at all.
pub async fn for_run(pool: &PgPool, run_id: i64) -> Result<RunTelemetry, DbError> {
    let notes = sqlx::query_scalar!("SELECT notes FROM run_telemetry WHERE run_id = $1", run_id)
        .fetch_optional(pool)
        .await?;
    let Some(notes) = notes else { return Ok(RunTelemetry::default()) };
    let points = rows(pool, &[run_id], None).await?.iter().filter_map(point).collect();
    Ok(RunTelemetry { collected: true, notes, points })
}

/// One series of several runs (a comparison's overlay); runs without it are left out.
pub async fn series_of_runs(
    pool: &PgPool,
    ids: &[i64],
    series: Series,
) -> Result<Vec<(i64, Vec<TelemetryPoint>)>, DbError> {
    let mut out: Vec<(i64, Vec<TelemetryPoint>)> = Vec::new();
    for r in rows(pool, ids, Some(series)).await? {
        let Some(p) = point(&r) else { continue };
        match out.last_mut() {
            Some((id, points)) if *id == r.run_id => points.push(p),
            _ => out.push((r.run_id, vec![p])),
        }
    }
    Ok(out)
}
