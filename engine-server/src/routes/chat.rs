//! `POST /v1/chat/completions`: messages through the model's chat template, then generation,
//! streamed as `chat.completion.chunk` events or returned as one `chat.completion`.

use super::params::{body_json, field, parse};
use crate::api_error::ApiError;
use crate::generation::{Generation, Piece, Usage};
use crate::sse::{self, ChunkFormat};
use crate::state::{AppState, unix_now};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use engine::chat_template::ChatMessage;
use engine::request::GenerateRequest;
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
            .map(|p| {
                match (
                    p.get("type").and_then(|t| t.as_str()),
                    p.get("text").and_then(|t| t.as_str()),
                ) {
                    (Some("text"), Some(t)) => Ok(t.to_string()),
                    _ => Err(ApiError::bad_request(
                        "`messages[].content`: only text parts are supported",
                    )),
                }
            })
            .collect(),
        _ => Err(ApiError::bad_request(
            "`messages[].content` must be a string or a list of parts",
        )),
    }
}

struct ChatFormat {
    id: String,
    created: u64,
    model: String,
}

impl ChunkFormat for ChatFormat {
    fn delta(&self, text: &str, first: bool, finish: Option<&str>) -> serde_json::Value {
        let delta = if first {
            json!({"role": "assistant", "content": text})
        } else {
            json!({"content": text})
        };
        json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        })
    }
    fn usage(&self, usage: Usage) -> serde_json::Value {
        json!({"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model, "choices": [], "usage": usage})
    }
}

pub async fn handle(State(state): State<AppState>, body: Bytes) -> Result<Response, ApiError> {
    let body = body_json(&body)?;
    let p = parse(&body, &state)?;
    let messages: Vec<InMessage> =
        field(&body, "messages")?.ok_or_else(|| ApiError::bad_request("`messages` is required"))?;
    let messages = messages
        .iter()
        .map(|m| {
            Ok(ChatMessage {
                role: m.role.clone(),
                content: content_text(&m.content)?,
            })
        })
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
    let generation = Generation::start(
        &state,
        GenerateRequest {
            prompt,
            params: p.params,
        },
        p.stops,
    )?;
    let fmt = ChatFormat {
        id: format!("chatcmpl-{:016x}", response_id(&state)),
        created: unix_now(),
        model: state.model_name.to_string(),
    };
    if p.stream {
        return Ok(sse::stream(generation, fmt, p.include_usage).into_response());
    }
    let (text, finish, usage) = collect(generation).await?;
    Ok(Json(json!({
        "id": fmt.id, "object": "chat.completion", "created": fmt.created, "model": fmt.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": null, "finish_reason": finish}],
        "usage": usage,
    }))
    .into_response())
}

/// Drain a generation for a non-streaming response.
pub async fn collect(mut g: Generation) -> Result<(String, &'static str, Usage), ApiError> {
    let mut text = String::new();
    let mut finish = "stop";
    while let Some(piece) = g.next().await {
        match piece {
            Piece::Delta {
                text: t, finish: f, ..
            } => {
                text.push_str(&t);
                if let Some(f) = f {
                    finish = f;
                }
            }
            Piece::Finished { usage } => return Ok((text, finish, usage)),
            Piece::Failed(msg) => {
                return Err(ApiError {
                    status: axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    kind: "server_error",
                    message: msg,
                    code: None,
                });
            }
        }
    }
    Err(ApiError::bad_request("generation ended without a result"))
}

/// Response ids: unique per process (a counter in the state) and across restarts (time).
pub fn response_id(state: &AppState) -> u64 {
    let n = state
        .response_counter
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    (unix_now() << 20) ^ n
}
