//! Storing results latlab did not measure (imports, the seed study): run + result +
//! request records in one transaction, straight to `succeeded`, never through the queue
//! (the queue never claims `imported` targets either).

use crate::{DbError, requests};
use bench_types::{RequestRecord, RunSpec, Summary};
use sqlx::types::Json;
use sqlx::{PgPool, Postgres, Transaction};

/// One imported run, borrowed from whoever parsed it.
pub struct NewImportedRun<'a> {
    pub spec: &'a RunSpec,
    pub summary: &'a Summary,
    pub requests: &'a [RequestRecord],
    pub notes: &'a [String],
}

/// Inserts the runs as `succeeded` with their results inside `tx`; returns their ids in order.
pub async fn insert_runs(
    tx: &mut Transaction<'_, Postgres>,
    runs: &[NewImportedRun<'_>],
) -> Result<Vec<i64>, DbError> {
    let mut ids = Vec::with_capacity(runs.len());
    for r in runs {
        let id = sqlx::query_scalar!(
            r#"INSERT INTO runs (spec, status, label, target_description, started_at, finished_at)
               VALUES ($1, 'succeeded', $2, $3, now(), now()) RETURNING id"#,
            Json(r.spec) as _,
            r.spec.label,
            r.spec.target_description(),
        )
        .fetch_one(&mut **tx)
        .await?;
        let s = r.summary;
        sqlx::query!(
            r#"INSERT INTO run_results (run_id, summary, target_info, notes, bench_started_at, completed, failed,
                                        duration_s, output_throughput, mean_ttft_ms, mean_tpot_ms)
               VALUES ($1, $2, '{}', $3, now(), $4, $5, $6, $7, $8, $9)"#,
            id,
            Json(s) as _,
            Json(r.notes) as _,
            s.completed as i32,
            s.failed as i32,
            s.duration_s,
            s.output_throughput,
            s.ttft.mean_ms,
            s.tpot.mean_ms,
        )
        .execute(&mut **tx)
        .await?;
        requests::insert_all(tx, id, r.requests).await?;
        ids.push(id);
    }
    Ok(ids)
}

/// Creates a comparison under a chosen slug (the seed study's stable permalink) inside `tx`.
pub async fn insert_comparison(
    tx: &mut Transaction<'_, Postgres>,
    slug: &str,
    title: &str,
    view: &serde_json::Value,
    run_ids: &[i64],
) -> Result<(), DbError> {
    let id = sqlx::query_scalar!(
        "INSERT INTO comparisons (slug, title, view) VALUES ($1, $2, $3) RETURNING id",
        slug,
        title,
        view
    )
    .fetch_one(&mut **tx)
    .await?;
    let positions: Vec<i32> = (0..run_ids.len() as i32).collect();
    sqlx::query!(
        r#"INSERT INTO comparison_runs (comparison_id, position, run_id)
           SELECT $1, p, r FROM UNNEST($2::INT4[], $3::BIGINT[]) AS t(p, r)"#,
        id,
        &positions,
        run_ids
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Whether a comparison with this slug exists (the seed loader's "already loaded" check).
pub async fn comparison_exists(pool: &PgPool, slug: &str) -> Result<bool, DbError> {
    Ok(sqlx::query_scalar!(r#"SELECT EXISTS (SELECT 1 FROM comparisons WHERE slug = $1) AS "e!""#, slug)
        .fetch_one(pool)
        .await?)
}
