//! An OpenAI-compatible server for worker tests. Each request streams 8 one-token chunks;
//! the model picks the behaviour: "slow" waits 300 ms between chunks, "flaky" answers
//! every second request with HTTP 500, anything else streams at once. Every Authorization
//! header it is sent is recorded.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::stream::{self, StreamExt};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Default)]
pub struct Seen {
    pub auth: Arc<Mutex<Vec<String>>>,
    requests: Arc<AtomicU64>,
}

async fn chat(State(seen): State<Seen>, headers: HeaderMap, Json(body): Json<serde_json::Value>) -> Response {
    seen.auth
        .lock()
        .unwrap()
        .push(headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_string());
    let n = seen.requests.fetch_add(1, Ordering::SeqCst);
    if body["model"] == "flaky" && n % 2 == 1 {
        return (StatusCode::INTERNAL_SERVER_ERROR, "flaky: every second request fails").into_response();
    }
    let gap = if body["model"] == "slow" { 300 } else { 1 };
    let chunks = stream::iter(0..=8u32).then(move |i| async move {
        tokio::time::sleep(Duration::from_millis(gap)).await;
        let data = if i < 8 {
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": "hi "}, "finish_reason": null}]})
        } else {
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": 8, "total_tokens": 16}})
        };
        Ok::<_, Infallible>(Event::default().data(data.to_string()))
    });
    Sse::new(chunks.chain(stream::once(async { Ok(Event::default().data("[DONE]")) }))).into_response()
}

/// Starts the server; returns its base URL and what it has seen.
pub async fn start() -> (String, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route(
            "/v1/models",
            get(|| async { Json(serde_json::json!({"object": "list", "data": [{"id": "fast"}]})) }),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen)
}

/// `base` with its database name replaced (the part of the path before any `?`).
pub fn with_database(base: &str, name: &str) -> String {
    let (head, query) =
        base.split_once('?').map(|(h, q)| (h, format!("?{q}"))).unwrap_or((base, String::new()));
    let cut = head.rfind('/').expect("a database URL has a path");
    format!("{}/{name}{query}", &head[..cut])
}

/// A fresh, migrated database `name` on the server `DATABASE_URL` points at.
pub async fn fresh_database(name: &str) -> String {
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL: a Postgres where we may create databases");
    let admin = with_database(&base, "postgres");
    {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&admin).await.unwrap();
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name}")).execute(&mut c).await.unwrap();
    }
    db::ensure_database(&admin, name).await.unwrap();
    with_database(&base, name)
}
