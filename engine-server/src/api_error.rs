//! Errors in OpenAI's JSON shape: `{"error": {"message", "type", "param", "code"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use engine::EngineError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
    pub code: Option<&'static str>,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "invalid_request_error",
            message: message.into(),
            code: None,
        }
    }
    pub fn unknown_model(name: &str) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            message: format!("The model `{name}` does not exist."),
            code: Some("model_not_found"),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        let message = e.to_string();
        match e {
            EngineError::BadRequest(_) | EngineError::Template(_) | EngineError::Tokenizer(_) => {
                ApiError::bad_request(message)
            }
            EngineError::QueueFull => ApiError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                kind: "server_error",
                message,
                code: None,
            },
            _ => ApiError {
                status: StatusCode::INTERNAL_SERVER_ERROR,
                kind: "server_error",
                message,
                code: None,
            },
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": { "message": self.message, "type": self.kind, "param": null, "code": self.code }
        });
        (self.status, axum::Json(body)).into_response()
    }
}
