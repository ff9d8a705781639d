//! Tags and notes on runs and comparisons (`bench_types::Annotations`, validated and
//! normalized by the caller). The whole set replaces the old one.

use crate::DbError;
use bench_types::Annotations;
use sqlx::PgPool;

/// `false` when there is no run `id`.
pub async fn set_for_run(pool: &PgPool, id: i64, a: &Annotations) -> Result<bool, DbError> {
    let n = sqlx::query!("UPDATE runs SET tags = $2, note = $3 WHERE id = $1", id, &a.tags, a.note)
        .execute(pool)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// `false` when there is no comparison `slug`.
pub async fn set_for_comparison(pool: &PgPool, slug: &str, a: &Annotations) -> Result<bool, DbError> {
    let n =
        sqlx::query!("UPDATE comparisons SET tags = $2, note = $3 WHERE slug = $1", slug, &a.tags, a.note)
            .execute(pool)
            .await?
            .rows_affected();
    Ok(n == 1)
}
