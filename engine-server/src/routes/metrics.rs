//! `GET /metrics`: Prometheus text format.

use crate::state::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

pub async fn handle(State(s): State<AppState>) -> impl IntoResponse {
    let shared = s.engine.shared();
    let mut body = s.metrics.render(&shared.stats);
    if let Some(spec) = &shared.speculative {
        crate::spec_metrics::render(&mut body, &shared.stats.spec, spec.num_steps);
        if let Some(l) = spec.synthetic_acceptance {
            crate::spec_metrics::render_synthetic(&mut body, l);
        }
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}
