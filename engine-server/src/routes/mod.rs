//! The HTTP surface: one file per route; shared request parsing in `params`.

mod chat;
mod completions;
mod health;
mod info;
mod metrics;
mod models;
mod params;
mod respond;

use crate::state::AppState;
use axum::Router;
use axum::routing::{get, post};

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat::handle))
        .route("/v1/completions", post(completions::handle))
        .route("/v1/models", get(models::handle))
        .route("/health", get(health::handle))
        .route("/metrics", get(metrics::handle))
        .route("/v1/engine/info", get(info::handle))
        .with_state(state)
}
