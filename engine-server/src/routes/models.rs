//! `GET /v1/models`: the one served model, marked when its weights are random.

use crate::state::AppState;
use axum::Json;
use axum::extract::State;

pub async fn handle(State(s): State<AppState>) -> Json<serde_json::Value> {
    let shared = s.engine.shared();
    Json(serde_json::json!({
        "object": "list",
        "data": [{
            "id": &*s.model_name,
            "object": "model",
            "created": s.created,
            "owned_by": "latlab",
            "max_model_len": shared.plan.max_model_len,
            "weights": if shared.origin.is_random() { "random" } else { "checkpoint" },
        }]
    }))
}
