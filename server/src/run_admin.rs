//! Tags and notes, archiving and deleting: the decisions the JSON API and the pages' plain
//! forms share, so both refuse the same things with the same words. Where the rules come
//! from: `db::run_removal` (why a run in a comparison is never deleted).

use crate::api::ApiError;
use bench_types::{Annotations, ValidationErrors};
use db::PgPool;
use db::run_removal::DeleteOutcome;

/// Normalizes and checks `a` (errors name `tags[i]` / `note`).
pub fn checked(a: &Annotations) -> Result<Annotations, ApiError> {
    let a = a.normalized();
    a.validate().map_err(ApiError::Invalid)?;
    Ok(a)
}

pub async fn annotate_run(pool: &PgPool, id: i64, a: &Annotations) -> Result<Annotations, ApiError> {
    let a = checked(a)?;
    if !db::annotations::set_for_run(pool, id, &a).await? {
        return Err(ApiError::NotFound(format!("no run with id {id}")));
    }
    Ok(a)
}

pub async fn annotate_comparison(
    pool: &PgPool,
    slug: &str,
    a: &Annotations,
) -> Result<Annotations, ApiError> {
    let a = checked(a)?;
    if !db::annotations::set_for_comparison(pool, slug, &a).await? {
        return Err(ApiError::NotFound(format!("no comparison {slug:?}")));
    }
    Ok(a)
}

pub async fn set_archived(pool: &PgPool, id: i64, archived: bool) -> Result<(), ApiError> {
    if !db::run_removal::set_archived(pool, id, archived).await? {
        return Err(ApiError::NotFound(format!("no run with id {id}")));
    }
    tracing::info!(run = id, archived, "run archive state changed");
    Ok(())
}

/// Deletes a comparison (its runs stay); a 404 when there is none.
pub async fn delete_comparison(pool: &PgPool, slug: &str) -> Result<(), ApiError> {
    if !db::comparisons::delete(pool, slug).await? {
        return Err(ApiError::NotFound(format!("no comparison {slug:?}")));
    }
    tracing::info!(comparison = slug, "comparison deleted");
    Ok(())
}

/// Deletes a finished run that no comparison lists; otherwise a 409 that says why and what
/// to do instead.
pub async fn delete_run(pool: &PgPool, id: i64) -> Result<(), ApiError> {
    match db::run_removal::delete(pool, id).await? {
        DeleteOutcome::Deleted => {
            tracing::info!(run = id, "run deleted");
            Ok(())
        }
        DeleteOutcome::NotFound => Err(ApiError::NotFound(format!("no run with id {id}"))),
        DeleteOutcome::Live(status) => Err(ApiError::Conflict(format!(
            "run #{id} is {status}: cancel it first, then delete it once it has stopped"
        ))),
        DeleteOutcome::InComparisons(list) => {
            let names: Vec<String> =
                list.iter().map(|c| format!("\"{}\" (/c/{})", c.title, c.slug)).collect();
            Err(ApiError::Conflict(format!(
                "run #{id} is in {} {}: {}; a comparison keeps every run it shows, so this run cannot be \
                 deleted. Archive it instead to hide it from the runs list, or delete those comparisons \
                 first",
                list.len(),
                if list.len() == 1 { "comparison" } else { "comparisons" },
                names.join(", ")
            )))
        }
    }
}

/// A refusal as one line for a page (field errors joined).
pub fn message(e: ApiError) -> String {
    e.status_and_message().1
}

/// A form's refusal that is not about a field.
pub fn invalid(field: &str, message: &str) -> ApiError {
    let mut e = ValidationErrors::default();
    e.push(field, message);
    ApiError::Invalid(e)
}
