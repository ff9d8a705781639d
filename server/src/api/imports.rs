//! `POST /api/imports`: results measured elsewhere (vLLM `--save-result` JSON or printed
//! "Serving Benchmark Result" blocks) with their configuration. 201 `{run_ids,
//! comparison_slug}`; a bad file is 400 naming the problem, and nothing is stored.

use super::ApiError;
use super::json_body::JsonBody;
use crate::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use bench_import::ImportRequest;
use bench_types::CreatedRuns;
use db::imports::NewImportedRun;

pub async fn create(
    State(st): State<AppState>,
    JsonBody(req): JsonBody<ImportRequest>,
) -> Result<(StatusCode, Json<CreatedRuns>), ApiError> {
    let created = store(&st.pool, &req).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// Parses and stores one import in a single transaction: the API and the import page
/// (`crate::import_page`) both come here. A bad file is `ApiError::BadRequest` naming the
/// problem, and nothing is stored.
pub async fn store(pool: &sqlx::PgPool, req: &ImportRequest) -> Result<CreatedRuns, ApiError> {
    // The page's form reaches here without the JSON extractor's check: the same refusal.
    let as_json = serde_json::to_value(req).map_err(|e| ApiError::Internal(e.to_string()))?;
    if let Some((path, c)) = bench_types::text::find_in_json("", &as_json) {
        return Err(ApiError::BadRequest(format!(
            "import refused: {path} must not contain {}",
            bench_types::text::describe(c)
        )));
    }
    let runs = req.into_runs().map_err(|e| ApiError::BadRequest(format!("import refused: {e}")))?;
    let rows: Vec<NewImportedRun> = runs
        .iter()
        .map(|r| NewImportedRun {
            spec: &r.spec,
            summary: &r.summary,
            requests: &r.requests,
            notes: &r.notes,
        })
        .collect();
    let mut tx = pool.begin().await.map_err(|e| ApiError::from(db::DbError::from(e)))?;
    let run_ids = db::imports::insert_runs(&mut tx, &rows).await?;
    let title = req.comparison_title.clone().filter(|t| !t.trim().is_empty()).or_else(|| {
        (run_ids.len() > 1).then(|| {
            format!(
                "Imported: {} ({})",
                req.config.engine,
                req.config.source.clone().unwrap_or_else(|| "upload".into())
            )
        })
    });
    let comparison_slug = match title {
        Some(t) => {
            let slug = db::comparisons::new_slug();
            let t: String = t.trim().chars().take(200).collect();
            db::imports::insert_comparison(&mut tx, &slug, &t, &serde_json::json!({}), &run_ids).await?;
            Some(slug)
        }
        None => None,
    };
    tx.commit().await.map_err(|e| ApiError::from(db::DbError::from(e)))?;
    tracing::info!(?run_ids, ?comparison_slug, "results imported");
    Ok(CreatedRuns { run_ids, comparison_slug })
}
