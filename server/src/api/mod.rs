//! The JSON API, mirroring the pages: `/api/runs`, `/api/runs/{id}`,
//! `/api/runs/{id}/requests`, `/api/comparisons`, `/api/comparisons/{slug}`.

mod comparisons;
mod error;
pub mod exports;
pub mod imports;
mod json_body;
mod query;
pub mod run_chart;
mod runs;

pub use error::ApiError;

use crate::AppState;
use axum::Router;
use axum::routing::get;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/runs", get(runs::list).post(runs::create))
        .route("/runs/{id}", get(runs::get_one).delete(runs::delete))
        .route("/runs/{id}/annotations", axum::routing::post(runs::annotate))
        .route("/runs/{id}/archive", axum::routing::post(runs::archive))
        .route("/runs/{id}/unarchive", axum::routing::post(runs::unarchive))
        .route("/runs/{id}/requests", get(runs::requests))
        .route("/runs/{id}/cancel", axum::routing::post(runs::cancel))
        .route("/runs/{id}/log", get(runs::log))
        .route("/runs/{id}/target", get(runs::target_info))
        .route("/comparisons", axum::routing::post(comparisons::create))
        .route("/comparisons/{slug}", get(comparisons::get_one).delete(comparisons::delete))
        .route("/comparisons/{slug}/annotations", axum::routing::post(comparisons::annotate))
        .route("/comparisons/{slug}/export.csv", get(exports::csv))
        .route("/comparisons/{slug}/export.json", get(exports::json))
        .route(
            "/imports",
            axum::routing::post(imports::create)
                .layer(axum::extract::DefaultBodyLimit::max(crate::router::MAX_IMPORT_BYTES)),
        )
        .fallback(|| async { ApiError::NotFound("no such API endpoint".into()) })
}
