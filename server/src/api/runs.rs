//! `/api/runs`: create (one run per sweep value), list (filtered, sorted, paged), one run,
//! its request records; tags and note, archive, delete.

use super::ApiError;
use super::json_body::JsonBody;
use crate::AppState;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderName, StatusCode};
use bench_types::{Annotations, CreatedRuns, RequestRecord, RunListQuery, RunSpec, RunView};

pub async fn create(
    State(st): State<AppState>,
    JsonBody(spec): JsonBody<RunSpec>,
) -> Result<(StatusCode, Json<CreatedRuns>), ApiError> {
    let created = crate::store::create_runs(&st.pool, spec).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// The runs list: the page's filters, sort and paging (`bench_types::RunListQuery`; an
/// unknown parameter or sort column is a 400 naming it). The body is the page's runs; the
/// `X-Total-Count` header says how many match in all.
pub async fn list(
    State(st): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<([(HeaderName, String); 1], Json<Vec<RunView>>), ApiError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.as_deref().unwrap_or(""))
        .map_err(|e| ApiError::BadRequest(format!("bad query string: {e}")))?;
    let q = RunListQuery::parse(&pairs, true).map_err(ApiError::Invalid)?;
    let page = db::run_list::list(&st.pool, &q).await?;
    Ok(([(HeaderName::from_static("x-total-count"), page.total.to_string())], Json(page.runs)))
}

/// Replaces a run's tags and note; answers with them as stored (trimmed, lower-case tags).
pub async fn annotate(
    State(st): State<AppState>,
    Path(id): Path<String>,
    JsonBody(a): JsonBody<Annotations>,
) -> Result<Json<Annotations>, ApiError> {
    let id = parse_id(&id)?;
    Ok(Json(crate::run_admin::annotate_run(&st.pool, id, &a).await?))
}

pub async fn archive(State(st): State<AppState>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    crate::run_admin::set_archived(&st.pool, parse_id(&id)?, true).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn unarchive(State(st): State<AppState>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    crate::run_admin::set_archived(&st.pool, parse_id(&id)?, false).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes a finished run no comparison lists (409 otherwise, saying why).
pub async fn delete(State(st): State<AppState>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    crate::run_admin::delete_run(&st.pool, parse_id(&id)?).await?;
    Ok(StatusCode::NO_CONTENT)
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
