//! `POST /v1/chat/completions`: messages through the model's chat template, then generation,
//! streamed as `chat.completion.chunk` events or returned as one `chat.completion`.

use super::params::{body_json, field, parse};
use super::respond::{Shape, respond};
use crate::api_error::ApiError;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use engine::chat_template::ChatMessage;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct InMessage {
    role: String,
    #[serde(default)]
    content: serde_json::Value,
}

/// Content is a string or a list of parts; text parts are joined (no images here).
fn content_text(v: &serde_json::Value) -> Result<String, ApiError> {
    match v {
        serde_json::Value::Null => Ok(String::new()),
        serde_json::Value::String(s) => Ok(s.clone()),
        serde_json::Value::Array(parts) => parts
            .iter()
            .map(|p| match (p.get("type").and_then(|t| t.as_str()), p.get("text").and_then(|t| t.as_str())) {
                (Some("text"), Some(t)) => Ok(t.to_string()),
                _ => Err(ApiError::bad_request("`messages[].content`: only text parts are supported")),
            })
            .collect(),
        _ => Err(ApiError::bad_request("`messages[].content` must be a string or a list of parts")),
    }
}

/// `chat.completion` / `chat.completion.chunk`: the first chunk names the role.
struct Chat;

impl Shape for Chat {
    const ID_PREFIX: &'static str = "chatcmpl";
    const CHUNK_OBJECT: &'static str = "chat.completion.chunk";
    const OBJECT: &'static str = "chat.completion";
    fn delta_choice(text: &str, first: bool, finish: Option<&str>) -> serde_json::Value {
        let delta =
            if first { json!({"role": "assistant", "content": text}) } else { json!({"content": text}) };
        json!({"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish})
    }
    fn choice(text: String, finish: &str) -> serde_json::Value {
        json!({"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": null, "finish_reason": finish})
    }
}

pub async fn handle(State(state): State<AppState>, body: Bytes) -> Result<Response, ApiError> {
    let body = body_json(&body)?;
    let p = parse(&body, &state)?;
    let messages: Vec<InMessage> =
        field(&body, "messages")?.ok_or_else(|| ApiError::bad_request("`messages` is required"))?;
    let messages = messages
        .iter()
        .map(|m| Ok(ChatMessage { role: m.role.clone(), content: content_text(&m.content)? }))
        .collect::<Result<Vec<_>, ApiError>>()?;
    let kwargs: Option<serde_json::Value> = field(&body, "chat_template_kwargs")?;
    let enable_thinking = kwargs
        .as_ref()
        .and_then(|k| k.get("enable_thinking"))
        .and_then(|v| v.as_bool())
        .or(field::<bool>(&body, "enable_thinking")?);
    let shared = state.engine.shared();
    let template = shared
        .tokenizer
        .chat_template
        .as_ref()
        .ok_or_else(|| ApiError::bad_request("this model has no chat template"))?;
    let prompt_text = template.render(&messages, enable_thinking)?;
    let prompt = shared.tokenizer.encode(&prompt_text)?;
    respond::<Chat>(&state, prompt, p).await
}
