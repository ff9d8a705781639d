//! `POST /v1/completions`: a raw prompt (text or token ids), no chat template.

use super::chat::{collect, response_id};
use super::params::{body_json, parse};
use crate::api_error::ApiError;
use crate::generation::{Generation, Usage};
use crate::sse::{self, ChunkFormat};
use crate::state::{AppState, unix_now};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use engine::request::GenerateRequest;
use serde_json::{Value, json};

struct CompletionFormat {
    id: String,
    created: u64,
    model: String,
}

impl ChunkFormat for CompletionFormat {
    fn delta(&self, text: &str, _first: bool, finish: Option<&str>) -> Value {
        json!({
            "id": self.id, "object": "text_completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": finish}],
        })
    }
    fn usage(&self, usage: Usage) -> Value {
        json!({"id": self.id, "object": "text_completion", "created": self.created, "model": self.model, "choices": [], "usage": usage})
    }
}

fn prompt_tokens(state: &AppState, prompt: Option<&Value>) -> Result<Vec<u32>, ApiError> {
    let tok = &state.engine.shared().tokenizer;
    let ids = |a: &[Value]| -> Option<Vec<u32>> {
        a.iter().map(|v| v.as_u64().map(|x| x as u32)).collect()
    };
    match prompt {
        Some(Value::String(s)) => Ok(tok.encode(s)?),
        Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => {
            Ok(tok.encode(a[0].as_str().unwrap_or_default())?)
        }
        Some(Value::Array(a)) if a.len() == 1 && a[0].is_array() => {
            ids(a[0].as_array().map(Vec::as_slice).unwrap_or_default())
                .ok_or_else(|| ApiError::bad_request("`prompt`: token ids must be integers"))
        }
        Some(Value::Array(a)) if a.iter().all(Value::is_number) && !a.is_empty() => ids(a)
            .ok_or_else(|| {
                ApiError::bad_request("`prompt`: token ids must be non-negative integers")
            }),
        Some(_) => Err(ApiError::bad_request(
            "`prompt` must be a string, a list of token ids, or a list with one of those",
        )),
        None => Err(ApiError::bad_request("`prompt` is required")),
    }
}

pub async fn handle(State(state): State<AppState>, body: Bytes) -> Result<Response, ApiError> {
    let body = body_json(&body)?;
    let p = parse(&body, &state)?;
    let prompt = prompt_tokens(&state, body.get("prompt"))?;
    let generation = Generation::start(
        &state,
        GenerateRequest {
            prompt,
            params: p.params,
        },
        p.stops,
    )?;
    let fmt = CompletionFormat {
        id: format!("cmpl-{:016x}", response_id(&state)),
        created: unix_now(),
        model: state.model_name.to_string(),
    };
    if p.stream {
        return Ok(sse::stream(generation, fmt, p.include_usage).into_response());
    }
    let (text, finish, usage) = collect(generation).await?;
    Ok(Json(json!({
        "id": fmt.id, "object": "text_completion", "created": fmt.created, "model": fmt.model,
        "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": finish}],
        "usage": usage,
    }))
    .into_response())
}
