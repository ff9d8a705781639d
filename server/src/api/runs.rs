//! `/api/runs`: create (one run per sweep value), list, one run, its request records.

use super::ApiError;
use super::json_body::JsonBody;
use super::query::ApiQuery;
use crate::AppState;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use bench_types::{CreatedRuns, RequestRecord, RunSpec, RunView};
use serde::Deserialize;

pub async fn create(
    State(st): State<AppState>,
    JsonBody(spec): JsonBody<RunSpec>,
) -> Result<(StatusCode, Json<CreatedRuns>), ApiError> {
    let created = crate::store::create_runs(&st.pool, spec).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    limit: Option<i64>,
    before: Option<i64>,
}

pub async fn list(
    State(st): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<Vec<RunView>>, ApiError> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::BadRequest("limit must be between 1 and 500".into()));
    }
    Ok(Json(db::runs::list(&st.pool, limit, q.before).await?))
}

pub async fn get_one(State(st): State<AppState>, Path(id): Path<String>) -> Result<Json<RunView>, ApiError> {
    let id = parse_id(&id)?;
    db::runs::get(&st.pool, id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no run with id {id}")))
}

pub async fn requests(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Vec<RequestRecord>>, ApiError> {
    let id = parse_id(&id)?;
    if db::runs::get(&st.pool, id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no run with id {id}")));
    }
    Ok(Json(db::requests::list(&st.pool, id).await?))
}

fn parse_id(s: &str) -> Result<i64, ApiError> {
    s.parse::<i64>().map_err(|_| ApiError::BadRequest(format!("run id {s:?} is not a number")))
}

/// Cancels a queued run at once, or asks the worker of a running one to stop.
pub async fn cancel(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = parse_id(&id)?;
    let outcome = crate::store::cancel_run(&st.pool, id).await?;
    Ok(Json(serde_json::json!({ "outcome": outcome })))
}

/// The tail of the engine's output (native and launched targets).
pub async fn log(State(st): State<AppState>, Path(id): Path<String>) -> Result<String, ApiError> {
    let id = parse_id(&id)?;
    if db::runs::get(&st.pool, id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no run with id {id}")));
    }
    Ok(db::queue::log(&st.pool, id).await?.unwrap_or_default())
}

/// What the target said about itself when the run measured it (`/v1/models`,
/// `/v1/engine/info`), and the report's notes; 404 until the run has a result.
pub async fn target_info(
    State(st): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = parse_id(&id)?;
    match db::results::extras(&st.pool, id).await? {
        Some(x) => Ok(Json(serde_json::json!({ "target_info": x.target_info, "notes": x.notes }))),
        None => Err(ApiError::NotFound(format!("run {id} has no result yet"))),
    }
}
