//! Request fields shared by chat and completions, parsed leniently like OpenAI's API (unknown
//! fields ignored) but with 400 errors that name a bad field.

use crate::api_error::ApiError;
use crate::state::AppState;
use engine::sampling::SamplingParams;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(untagged)]
enum StopField {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize, Default)]
struct StreamOptions {
    include_usage: Option<bool>,
}

#[derive(Deserialize)]
struct Common {
    model: Option<String>,
    max_tokens: Option<usize>,
    max_completion_tokens: Option<usize>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    /// vLLM's extension; -1 or 0 disables.
    top_k: Option<i64>,
    seed: Option<u64>,
    stop: Option<StopField>,
    stop_token_ids: Option<Vec<u32>>,
    ignore_eos: Option<bool>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    n: Option<usize>,
}

pub struct Parsed {
    pub params: SamplingParams,
    pub stops: Vec<String>,
    pub stream: bool,
    pub include_usage: bool,
}

pub fn body_json(body: &[u8]) -> Result<serde_json::Value, ApiError> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))?;
    if !v.is_object() {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    }
    Ok(v)
}

/// A typed field of the body, with the field's name in the error.
pub fn field<T: serde::de::DeserializeOwned>(
    body: &serde_json::Value,
    name: &str,
) -> Result<Option<T>, ApiError> {
    match body.get(name) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| ApiError::bad_request(format!("`{name}`: {e}"))),
    }
}

pub fn parse(body: &serde_json::Value, state: &AppState) -> Result<Parsed, ApiError> {
    let c: Common = serde_json::from_value(body.clone())
        .map_err(|e| ApiError::bad_request(format!("invalid request: {e}")))?;
    if let Some(m) = &c.model
        && m != &*state.model_name
    {
        return Err(ApiError::unknown_model(m));
    }
    if c.n.is_some_and(|n| n != 1) {
        return Err(ApiError::bad_request("`n` must be 1"));
    }
    let top_k = match c.top_k {
        None | Some(-1) | Some(0) => 0,
        Some(k) if k > 0 => k as usize,
        Some(k) => {
            return Err(ApiError::bad_request(format!("`top_k` must be -1 or positive, got {k}")));
        }
    };
    let stops = match c.stop {
        None => vec![],
        Some(StopField::One(s)) => vec![s],
        Some(StopField::Many(v)) => v,
    };
    let vocab = state.engine.shared().config.vocab_size;
    let stop_token_ids = c.stop_token_ids.unwrap_or_default();
    if let Some(bad) = stop_token_ids.iter().find(|&&t| t as usize >= vocab) {
        return Err(ApiError::bad_request(format!("`stop_token_ids`: {bad} is out of range")));
    }
    let params = SamplingParams {
        temperature: c.temperature.unwrap_or(1.0),
        top_p: c.top_p.unwrap_or(1.0),
        top_k,
        seed: c.seed,
        // max_completion_tokens is the chat API's newer name; it wins when both are sent.
        max_tokens: c.max_completion_tokens.or(c.max_tokens),
        stop_token_ids,
        ignore_eos: c.ignore_eos.unwrap_or(false),
    };
    params.validate()?;
    let stream = c.stream.unwrap_or(false);
    let include_usage = stream && c.stream_options.unwrap_or_default().include_usage.unwrap_or(false);
    Ok(Parsed { params, stops, stream, include_usage })
}
