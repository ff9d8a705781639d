//! API errors as JSON: `{"error": {"message": "...", "fields": [{"field", "message"}]}}`,
//! with 400 for bad input (naming the field), 404, 415, 500. A 500's details stay in the
//! server's log.

use app::store::StoreError;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bench_types::ValidationErrors;

#[derive(Debug)]
pub enum ApiError {
    Invalid(ValidationErrors),
    BadRequest(String),
    UnsupportedMediaType(String),
    TooLarge(String),
    NotFound(String),
    /// The request is understood but the thing's state forbids it (409), e.g. deleting a
    /// run a comparison lists.
    Conflict(String),
    Internal(String),
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Invalid(v) => ApiError::Invalid(v),
            StoreError::Internal(m) => ApiError::Internal(m),
        }
    }
}

impl From<db::DbError> for ApiError {
    fn from(e: db::DbError) -> Self {
        match e {
            db::DbError::RunNotFound(id) => ApiError::NotFound(format!("no run with id {id}")),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl ApiError {
    /// The status and the message the JSON body carries (field errors folded into it).
    pub fn status_and_message(self) -> (StatusCode, String) {
        let (status, message, _) = self.into_parts();
        (status, message)
    }

    fn into_parts(self) -> (StatusCode, String, Vec<bench_types::FieldError>) {
        match self {
            ApiError::Invalid(v) => (StatusCode::BAD_REQUEST, format!("invalid input: {v}"), v.0),
            ApiError::BadRequest(m) => (StatusCode::BAD_REQUEST, m, vec![]),
            ApiError::UnsupportedMediaType(m) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, m, vec![]),
            ApiError::TooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, m, vec![]),
            ApiError::NotFound(m) => (StatusCode::NOT_FOUND, m, vec![]),
            ApiError::Conflict(m) => (StatusCode::CONFLICT, m, vec![]),
            // The details (a database error, say) go to the log; the client gets a
            // reference to find them by, never the details themselves.
            ApiError::Internal(m) => {
                let reference = rand::random::<u32>();
                tracing::error!(reference = format!("{reference:08x}"), error = %m, "internal error");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("internal error (reference {reference:08x} in the server's log)"),
                    vec![],
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, message, fields) = self.into_parts();
        (status, Json(serde_json::json!({ "error": { "message": message, "fields": fields } })))
            .into_response()
    }
}
