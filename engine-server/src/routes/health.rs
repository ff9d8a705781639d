//! `GET /health`: 200 once the engine is up (the server only listens after the model loaded).

pub async fn handle() -> &'static str {
    "ok"
}
