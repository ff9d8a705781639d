//! `GET /runs/{id}/chart.svg?chart=timeline|distribution&metric=..&dist=..&from=..&to=..`:
//! the run page's charts as files, drawn by the same code as the page. A parameter that
//! means nothing is a 400 naming it; a run without per-request records gets a chart that
//! says so.

use super::ApiError;
use crate::AppState;
use app::components::run_charts::view::query_pairs;
use app::components::run_charts::{RunChartView, render};
use axum::extract::{Path, RawQuery, State};
use axum::http::header;
use axum::response::IntoResponse;

pub async fn chart_svg(
    State(st): State<AppState>,
    Path(id): Path<i64>,
    RawQuery(q): RawQuery,
) -> Result<impl IntoResponse, ApiError> {
    let (chart, view) =
        RunChartView::parse_svg(&query_pairs(q.as_deref().unwrap_or_default())).map_err(ApiError::Invalid)?;
    if db::runs::get(&st.pool, id).await?.is_none() {
        return Err(ApiError::NotFound(format!("no run {id}")));
    }
    let records = db::requests::list(&st.pool, id).await?;
    let svg = render(&records, chart, &view).map_err(ApiError::Internal)?;
    Ok((
        [
            (header::CONTENT_TYPE, "image/svg+xml; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("inline; filename=\"latlab-run-{id}-{}.svg\"", chart.key()),
            ),
        ],
        svg,
    ))
}
