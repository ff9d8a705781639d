//! `/api/comparisons`: create a permalink for an ordered set of runs; read one back; delete
//! one (its runs stay).

use super::ApiError;
use super::json_body::JsonBody;
use crate::AppState;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use bench_types::{Annotations, ComparisonView, NewComparison};

pub async fn create(
    State(st): State<AppState>,
    JsonBody(new): JsonBody<NewComparison>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    let slug = crate::store::create_comparison(&st.pool, new).await?;
    let url = format!("/c/{slug}");
    Ok((StatusCode::CREATED, Json(serde_json::json!({ "slug": slug, "url": url }))))
}

pub async fn get_one(
    State(st): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Json<ComparisonView>, ApiError> {
    db::comparisons::get(&st.pool, &slug)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no comparison {slug:?}")))
}

/// Replaces a comparison's tags and note; answers with them as stored.
pub async fn annotate(
    State(st): State<AppState>,
    Path(slug): Path<String>,
    JsonBody(a): JsonBody<Annotations>,
) -> Result<Json<Annotations>, ApiError> {
    Ok(Json(crate::run_admin::annotate_comparison(&st.pool, &slug, &a).await?))
}

/// Deletes a comparison: 204, or 404 when there is none. Its runs stay.
pub async fn delete(State(st): State<AppState>, Path(slug): Path<String>) -> Result<StatusCode, ApiError> {
    crate::run_admin::delete_comparison(&st.pool, &slug).await?;
    Ok(StatusCode::NO_CONTENT)
}
