//! A JSON body extractor whose errors name the offending field (`load.max_concurrency[1]:
//! invalid type...`) instead of axum's generic rejection text.

use super::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header::CONTENT_TYPE;
use bench_types::ValidationErrors;
use serde::de::DeserializeOwned;

pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
            v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
        if !is_json {
            return Err(ApiError::UnsupportedMediaType(
                "send the body as JSON with Content-Type: application/json".into(),
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::TooLarge(format!("the body is larger than this endpoint accepts: {e}"))
            } else {
                ApiError::BadRequest(format!("could not read the body: {e}"))
            }
        })?;
        // Syntax first, then characters no stored text may hold (anywhere, however deep),
        // then the shape: each error names where it is.
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
        if let Some((path, c)) = bench_types::text::find_in_json("", &value) {
            let mut v = ValidationErrors::default();
            v.push(&path, format!("must not contain {}", bench_types::text::describe(c)));
            return Err(ApiError::Invalid(v));
        }
        match serde_path_to_error::deserialize::<_, T>(value) {
            Ok(v) => Ok(JsonBody(v)),
            Err(e) => {
                let path = e.path().to_string();
                let inner = e.into_inner();
                // Type errors at the top level have the path ".".
                if path == "." || path == "?" || path.is_empty() {
                    return Err(ApiError::BadRequest(format!("invalid JSON body: {inner}")));
                }
                let mut v = ValidationErrors::default();
                v.push(&path, inner.to_string());
                Err(ApiError::Invalid(v))
            }
        }
    }
}
