//! Archiving and deleting runs.
//!
//! A comparison is a permalink people share as evidence, so a run in one is never deleted
//! from under it: deleting is refused with the comparisons named, and archiving (which
//! hides the run from the runs list but keeps it, its numbers and every comparison whole)
//! is what tidies such a run away, unless its comparisons are deleted first
//! (`comparisons::delete`: whoever shares a permalink may also retract it). A queued or running run is refused too: cancel it first,
//! so a worker never finds its run gone mid-benchmark. Everything else a run owns (result,
//! request records, telemetry, log) goes with it, in one transaction.

use crate::DbError;
use bench_types::{ComparisonRef, RunStatus};
use sqlx::PgPool;

/// What a delete did, or why it did not.
#[derive(Debug, Clone, PartialEq)]
pub enum DeleteOutcome {
    Deleted,
    NotFound,
    /// Queued or running: cancel it first.
    Live(RunStatus),
    /// Listed by these comparisons (newest first): archive it instead.
    InComparisons(Vec<ComparisonRef>),
}

/// Archives (`true`) or un-archives a run; `false` when there is no run `id`. Archiving an
/// archived run keeps its first date.
pub async fn set_archived(pool: &PgPool, id: i64, archived: bool) -> Result<bool, DbError> {
    let n = sqlx::query!(
        "UPDATE runs SET archived_at = CASE WHEN $2 THEN COALESCE(archived_at, now()) END WHERE id = $1",
        id,
        archived
    )
    .execute(pool)
    .await?
    .rows_affected();
    Ok(n == 1)
}

pub async fn delete(pool: &PgPool, id: i64) -> Result<DeleteOutcome, DbError> {
    let mut tx = pool.begin().await?;
    // The row lock keeps a worker from claiming the run, and a new comparison from taking
    // it in (its foreign key waits on this lock), until the delete is decided.
    let Some(status) = sqlx::query_scalar!("SELECT status FROM runs WHERE id = $1 FOR UPDATE", id)
        .fetch_optional(&mut *tx)
        .await?
    else {
        return Ok(DeleteOutcome::NotFound);
    };
    let status: RunStatus = status
        .parse()
        .map_err(|e: String| DbError::Decode(serde::de::Error::custom(format!("run {id}: {e}"))))?;
    if !status.is_terminal() {
        return Ok(DeleteOutcome::Live(status));
    }
    let comparisons = sqlx::query!(
        "SELECT c.slug, c.title FROM comparisons c JOIN comparison_runs cr ON cr.comparison_id = c.id
         WHERE cr.run_id = $1 ORDER BY c.id DESC",
        id
    )
    .fetch_all(&mut *tx)
    .await?;
    if !comparisons.is_empty() {
        return Ok(DeleteOutcome::InComparisons(
            comparisons.into_iter().map(|c| ComparisonRef { slug: c.slug, title: c.title }).collect(),
        ));
    }
    sqlx::query!("DELETE FROM runs WHERE id = $1", id).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(DeleteOutcome::Deleted)
}
