//! What the two generation routes share: starting the generation and answering it, as SSE
//! chunks or as one JSON body, in the endpoint's `Shape`; the response id; and draining a
//! generation for the non-streaming body.

use super::params::Parsed;
use crate::api_error::ApiError;
use crate::generation::{Generation, Piece, Usage};
use crate::sse::{self, ChunkFormat};
use crate::state::{AppState, unix_now};
use axum::Json;
use axum::response::{IntoResponse, Response};
use engine::request::GenerateRequest;
use serde_json::{Value, json};
use std::marker::PhantomData;

/// How one endpoint names and shapes its responses.
pub trait Shape: 'static {
    /// Prefix of response ids ("chatcmpl", "cmpl").
    const ID_PREFIX: &'static str;
    /// `object` of streamed chunks and of the whole response.
    const CHUNK_OBJECT: &'static str;
    const OBJECT: &'static str;
    /// The one choice of a streamed chunk.
    fn delta_choice(text: &str, first: bool, finish: Option<&str>) -> Value;
    /// The one choice of a whole response.
    fn choice(text: String, finish: &str) -> Value;
}

struct Format<S> {
    id: String,
    created: u64,
    model: String,
    // fn() -> S: the format is Send whatever S is (S is only a name for its shape).
    shape: PhantomData<fn() -> S>,
}

impl<S: Shape> ChunkFormat for Format<S> {
    fn delta(&self, text: &str, first: bool, finish: Option<&str>) -> Value {
        json!({
            "id": self.id, "object": S::CHUNK_OBJECT, "created": self.created, "model": self.model,
            "choices": [S::delta_choice(text, first, finish)],
        })
    }
    fn usage(&self, usage: Usage) -> Value {
        json!({"id": self.id, "object": S::CHUNK_OBJECT, "created": self.created, "model": self.model, "choices": [], "usage": usage})
    }
}

/// Generate from `prompt` with the request's parameters and answer in `S`'s shape.
pub async fn respond<S: Shape>(state: &AppState, prompt: Vec<u32>, p: Parsed) -> Result<Response, ApiError> {
    let generation = Generation::start(state, GenerateRequest { prompt, params: p.params }, p.stops)?;
    let fmt = Format::<S> {
        id: format!("{}-{:016x}", S::ID_PREFIX, response_id(state)),
        created: unix_now(),
        model: state.model_name.to_string(),
        shape: PhantomData,
    };
    if p.stream {
        return Ok(sse::stream(generation, fmt, p.include_usage).into_response());
    }
    let (text, finish, usage) = collect(generation).await?;
    Ok(Json(json!({
        "id": fmt.id, "object": S::OBJECT, "created": fmt.created, "model": fmt.model,
        "choices": [S::choice(text, finish)],
        "usage": usage,
    }))
    .into_response())
}

/// Drain a generation for a non-streaming response.
async fn collect(mut g: Generation) -> Result<(String, &'static str, Usage), ApiError> {
    let mut text = String::new();
    let mut finish = "stop";
    while let Some(piece) = g.next().await {
        match piece {
            Piece::Delta { text: t, finish: f, .. } => {
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
fn response_id(state: &AppState) -> u64 {
    let n = state.response_counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    (unix_now() << 20) ^ n
}
