//! `GET /v1/engine/info`: model config, derived plan, backend and weights origin, so that
//! every result can be stored next to the settings that produced it.

use crate::state::AppState;
use axum::Json;
use axum::extract::State;

pub async fn handle(State(s): State<AppState>) -> Json<serde_json::Value> {
    let shared = s.engine.shared();
    Json(serde_json::json!({
        "engine": "latlab-engine",
        "version": env!("CARGO_PKG_VERSION"),
        "served_model_name": &*s.model_name,
        "backend": shared.plan.backend,
        "gpu": shared.plan.gpu,
        "weights": if shared.origin.is_random() { "random" } else { "checkpoint" },
        "weights_origin": shared.origin,
        // How the projections are held: "fp8" (stored so, or quantized at load) or "none".
        "quantization": shared.config.quantization.map_or("none", |q| q.name()),
        "config": shared.config,
        "plan": shared.plan,
        "tokenizer_dir": shared.tokenizer.dir,
        // The draft and tree, or null; synthetic acceptance and a random draft's acceptance
        // are labelled as such.
        "speculative": shared.speculative,
        "speculative_note": shared.speculative.as_ref().and_then(|s| match s.synthetic_acceptance {
            Some(l) => Some(format!(
                "synthetic acceptance: proposals from recorded greedy continuations, made to accept {l} tokens                  per round on average; the draft runs for its time only; speed measurement, not a draft's quality"
            )),
            None if s.draft.random_weights => Some("random draft weights: acceptance means nothing".to_string()),
            None => None,
        }),
    }))
}
