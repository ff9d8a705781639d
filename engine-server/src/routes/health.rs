//! `GET /health`: 200 while the engine thread runs (the server only listens after the model
//! loaded), 503 if it has died.

use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;

pub async fn handle(State(s): State<AppState>) -> (StatusCode, &'static str) {
    if s.engine.is_alive() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "engine thread stopped")
    }
}
