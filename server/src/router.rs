//! `router(state)`: every route and middleware of latlab, in one place, testable with
//! `oneshot` without a socket.

use crate::AppState;
use crate::store::DbStore;
use app::store::SharedStore;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::routing::get;
use axum::{Json, Router};
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, generate_route_list};
use std::sync::Arc;
use std::time::Duration;
use tower_http::compression::CompressionLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// Bodies above this are refused with 413 (a RunSpec is a few hundred bytes).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Imports carry vLLM result files with every request's timings: allow more there.
pub const MAX_IMPORT_BYTES: usize = 64 << 20;
/// No request to latlab's own server should take longer; benchmarks run in workers.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Leptos emits small inline scripts for hydration; everything else must come from us.
const CSP: &str = "default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; \
                   style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
                   frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

pub fn router(state: AppState) -> Router {
    let store: SharedStore = Arc::new(DbStore { pool: state.pool.clone() });
    let leptos_options = state.leptos_options.clone();
    let routes = generate_route_list(app::App);
    Router::new()
        .route("/healthz", get(healthz))
        .route("/login", get(crate::auth::login_page).post(crate::auth::login))
        .route("/logout", axum::routing::post(crate::auth::logout))
        .nest("/api", crate::api::routes())
        // The import form's post; GET /import is the Leptos page below.
        .route(
            app::pages::IMPORT_PATH,
            axum::routing::post(crate::import_page::submit)
                .layer(axum::extract::DefaultBodyLimit::max(MAX_IMPORT_BYTES)),
        )
        .route("/c/{slug}/chart.svg", get(crate::api::exports::chart_svg))
        .route("/runs/{id}/chart.svg", get(crate::api::run_chart::chart_svg))
        .route(app::pages::COMPARE_PATH, axum::routing::post(crate::compare_form::submit))
        // The run and comparison pages' plain forms; GET /runs/{id}/delete and
        // /c/{slug}/delete are the Leptos confirmation pages.
        .route("/runs/{id}/annotations", axum::routing::post(crate::run_forms::annotate_run))
        .route("/runs/{id}/archive", axum::routing::post(crate::run_forms::archive))
        .route("/runs/{id}/delete", axum::routing::post(crate::run_forms::delete))
        .route("/c/{slug}/annotations", axum::routing::post(crate::run_forms::annotate_comparison))
        .route("/c/{slug}/delete", axum::routing::post(crate::run_forms::delete_comparison))
        .leptos_routes_with_context(
            &state,
            routes,
            move || provide_context(store.clone()),
            move || app::shell(leptos_options.clone()),
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(app::shell))
        .layer(axum::middleware::from_fn(static_cache))
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::auth::require_for_writes))
        // Outside auth: Host and cross-origin checks apply with or without a token.
        .layer(axum::middleware::from_fn_with_state(state.clone(), crate::request_guard::guard))
        // The outer cap is the import size; every route but the imports lowers it to
        // MAX_BODY_BYTES with DefaultBodyLimit (see api::routes and POST /import above).
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(RequestBodyLimitLayer::new(MAX_IMPORT_BYTES))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, REQUEST_TIMEOUT))
        .layer(CompressionLayer::new())
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        ))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// The browser bundle and static files keep their names from build to build, so browsers
/// may keep them but must revalidate (a 304 costs a round trip, a stale bundle breaks
/// hydration).
async fn static_cache(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let is_static = {
        let p = req.uri().path();
        p.starts_with("/pkg/") || p == "/favicon.svg"
    };
    let mut resp = next.run(req).await;
    if is_static && resp.status().is_success() {
        resp.headers_mut()
            .entry(header::CACHE_CONTROL)
            .or_insert(HeaderValue::from_static("public, no-cache"));
    }
    resp
}

/// 200 when the database answers, 503 otherwise.
async fn healthz(State(st): State<AppState>) -> (StatusCode, Json<serde_json::Value>) {
    match sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&st.pool).await {
        Ok(_) => (StatusCode::OK, Json(serde_json::json!({ "status": "ok", "database": "ok" }))),
        Err(e) => {
            tracing::error!(error = %e, "health check: database unreachable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(serde_json::json!({ "status": "unavailable", "database": "unreachable" })),
            )
        }
    }
}
