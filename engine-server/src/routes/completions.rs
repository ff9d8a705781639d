//! `POST /v1/completions`: a raw prompt (text or token ids), no chat template.

use super::params::{body_json, parse};
use super::respond::{Shape, respond};
use crate::api_error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use serde_json::{Value, json};

/// `text_completion`, streamed or whole: the choice carries the text either way.
struct Completion;

impl Shape for Completion {
    const ID_PREFIX: &'static str = "cmpl";
    const CHUNK_OBJECT: &'static str = "text_completion";
    const OBJECT: &'static str = "text_completion";
    fn delta_choice(text: &str, _first: bool, finish: Option<&str>) -> Value {
        json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish})
    }
    fn choice(text: String, finish: &str) -> Value {
        Self::delta_choice(&text, false, Some(finish))
    }
}

fn prompt_tokens(state: &AppState, prompt: Option<&Value>) -> Result<Vec<u32>, ApiError> {
    let tok = &state.engine.shared().tokenizer;
    let ids = |a: &[Value]| -> Option<Vec<u32>> { a.iter().map(|v| v.as_u64().map(|x| x as u32)).collect() };
    match prompt {
        Some(Value::String(s)) => Ok(tok.encode(s)?),
        Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => {
            Ok(tok.encode(a[0].as_str().unwrap_or_default())?)
        }
        Some(Value::Array(a)) if a.len() == 1 && a[0].is_array() => {
            ids(a[0].as_array().map(Vec::as_slice).unwrap_or_default())
                .ok_or_else(|| ApiError::bad_request("`prompt`: token ids must be integers"))
        }
        Some(Value::Array(a)) if a.iter().all(Value::is_number) && !a.is_empty() => {
            ids(a).ok_or_else(|| ApiError::bad_request("`prompt`: token ids must be non-negative integers"))
        }
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
    respond::<Completion>(&state, prompt, p).await
}
