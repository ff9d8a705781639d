//! The `comparisons` and `comparison_runs` tables: ordered sets of runs under a permalink.

use crate::{DbError, runs};
use bench_types::{ComparisonRef, ComparisonSummary, ComparisonView, NewComparison};
use rand::Rng;
use sqlx::{PgPool, Postgres, Transaction};

/// Unguessable enough for a share link, short enough to read aloud: 10 chars of base62
/// (~59 bits).
pub fn new_slug() -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut rng = rand::rng();
    (0..10).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// Creates a comparison of existing runs inside `tx`; returns its slug. A run id that
/// does not exist fails the call before anything is written.
pub async fn create(tx: &mut Transaction<'_, Postgres>, new: &NewComparison) -> Result<String, DbError> {
    // Name the first unknown run instead of surfacing a bare foreign-key error.
    let missing = sqlx::query_scalar!(
        r#"SELECT w.id AS "id!" FROM UNNEST($1::BIGINT[]) WITH ORDINALITY AS w(id, ord)
           WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = w.id) ORDER BY w.ord LIMIT 1"#,
        &new.run_ids
    )
    .fetch_optional(&mut **tx)
    .await?;
    if let Some(id) = missing {
        return Err(DbError::RunNotFound(id));
    }
    let slug = new_slug();
    let view = if new.view.is_null() { serde_json::json!({}) } else { new.view.clone() };
    let id = sqlx::query_scalar!(
        "INSERT INTO comparisons (slug, title, view) VALUES ($1, $2, $3) RETURNING id",
        slug,
        new.title.trim(),
        view
    )
    .fetch_one(&mut **tx)
    .await?;
    let positions: Vec<i32> = (0..new.run_ids.len() as i32).collect();
    sqlx::query!(
        r#"INSERT INTO comparison_runs (comparison_id, position, run_id)
           SELECT $1, p, r FROM UNNEST($2::INT4[], $3::BIGINT[]) AS t(p, r)"#,
        id,
        &positions,
        &new.run_ids
    )
    .execute(&mut **tx)
    .await?;
    Ok(slug)
}

/// Deletes the comparison `slug`: its permalink and run list go (`comparison_runs` cascades),
/// its runs stay, and a run no other comparison lists may then be deleted
/// (`run_removal`). False when there is no such comparison.
pub async fn delete(pool: &PgPool, slug: &str) -> Result<bool, DbError> {
    // Unchecked at compile time (`query`, not `query!`): one statement over two columns,
    // covered by server/tests/run_admin.rs against a real database.
    let n = sqlx::query("DELETE FROM comparisons WHERE slug = $1")
        .bind(slug)
        .execute(pool)
        .await?
        .rows_affected();
    Ok(n == 1)
}

pub async fn get(pool: &PgPool, slug: &str) -> Result<Option<ComparisonView>, DbError> {
    let Some(c) = sqlx::query!(
        "SELECT id, slug, title, view, created_at, tags, note FROM comparisons WHERE slug = $1",
        slug
    )
    .fetch_optional(pool)
    .await?
    else {
        return Ok(None);
    };
    let ids = sqlx::query_scalar!(
        "SELECT run_id FROM comparison_runs WHERE comparison_id = $1 ORDER BY position",
        c.id
    )
    .fetch_all(pool)
    .await?;
    let runs = runs::get_many(pool, &ids).await?;
    Ok(Some(ComparisonView {
        slug: c.slug,
        title: c.title,
        created_at: c.created_at,
        view: c.view,
        runs,
        tags: c.tags,
        note: c.note,
    }))
}

/// Newest first, `limit` at most, older than the comparison `before` when given; `only`
/// keeps just that slug (a summary of one comparison).
pub async fn list(
    pool: &PgPool,
    limit: i64,
    before: Option<&str>,
    only: Option<&str>,
) -> Result<Vec<ComparisonSummary>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT c.slug, c.title, c.created_at,
                  COUNT(r.id) AS "runs!",
                  COALESCE(array_agg(DISTINCT r.target_description) FILTER (WHERE r.id IS NOT NULL), '{}') AS "engines!",
                  COUNT(r.id) FILTER (WHERE r.status IN ('queued', 'running')) AS "live!"
           FROM comparisons c
           LEFT JOIN comparison_runs cr ON cr.comparison_id = c.id
           LEFT JOIN runs r ON r.id = cr.run_id
           WHERE ($2::TEXT IS NULL OR c.id < (SELECT id FROM comparisons WHERE slug = $2))
             AND ($3::TEXT IS NULL OR c.slug = $3)
           GROUP BY c.id ORDER BY c.id DESC LIMIT $1"#,
        limit,
        before,
        only
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| ComparisonSummary {
            slug: r.slug,
            title: r.title,
            created_at: r.created_at,
            runs: r.runs,
            engines: r.engines,
            live: r.live,
        })
        .collect())
}

/// The comparisons `run_id` belongs to, newest first.
pub async fn of_run(pool: &PgPool, run_id: i64) -> Result<Vec<ComparisonRef>, DbError> {
    let rows = sqlx::query!(
        "SELECT c.slug, c.title FROM comparisons c JOIN comparison_runs cr ON cr.comparison_id = c.id
         WHERE cr.run_id = $1 ORDER BY c.id DESC LIMIT 50",
        run_id
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| ComparisonRef { slug: r.slug, title: r.title }).collect())
}
