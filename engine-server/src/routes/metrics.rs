//! `GET /metrics`: Prometheus text format.

use crate::state::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

pub async fn handle(State(s): State<AppState>) -> impl IntoResponse {
    let body = s.metrics.render(&s.engine.shared().stats);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}
