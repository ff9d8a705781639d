//! The `comparisons` and `comparison_runs` tables: ordered sets of runs under a permalink.

use crate::{runs, DbError};
use bench_types::{ComparisonView, NewComparison};
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

pub async fn get(pool: &PgPool, slug: &str) -> Result<Option<ComparisonView>, DbError> {
    let Some(c) = sqlx::query!(
        "SELECT id, slug, title, view, created_at FROM comparisons WHERE slug = $1",
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
    Ok(Some(ComparisonView { slug: c.slug, title: c.title, created_at: c.created_at, view: c.view, runs }))
}

/// Newest first.
pub async fn list(pool: &PgPool, limit: i64) -> Result<Vec<(String, String, i64)>, DbError> {
    let rows = sqlx::query!(
        r#"SELECT c.slug, c.title, (SELECT COUNT(*) FROM comparison_runs cr WHERE cr.comparison_id = c.id) AS "n!"
           FROM comparisons c ORDER BY c.id DESC LIMIT $1"#,
        limit
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| (r.slug, r.title, r.n)).collect())
}
