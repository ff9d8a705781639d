//! A TestApp over `router(state)`: requests go through every layer, without a socket; and
//! a real listening server (`serve`). Shared by several test binaries, each using a part.
#![allow(dead_code)]

pub mod fake_openai;
pub mod processes;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use server::{AppState, router};
use sqlx::PgPool;
use tower::ServiceExt;

pub struct TestApp {
    pub pool: PgPool,
    app: axum::Router,
}

pub struct Reply {
    pub status: StatusCode,
    pub content_type: String,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

impl TestApp {
    pub fn new(pool: PgPool) -> Self {
        Self::with_token(pool, None)
    }

    /// An app whose writes need `token` (as when it listens beyond loopback).
    pub fn with_token(pool: PgPool, token: Option<&str>) -> Self {
        let state = AppState::new(pool.clone(), "target/site", "127.0.0.1:0".parse().unwrap())
            .with_api_token(token.map(str::to_string));
        TestApp { pool, app: router(state) }
    }

    pub async fn send(&self, req: Request<Body>) -> Reply {
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let content_type =
            headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        Reply { status, content_type, headers, body: String::from_utf8_lossy(&bytes).into_owned() }
    }

    pub async fn get(&self, uri: &str) -> Reply {
        self.send(Request::get(uri).body(Body::empty()).unwrap()).await
    }

    pub async fn post_json(&self, uri: &str, body: &serde_json::Value) -> Reply {
        self.send(
            Request::post(uri)
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
    }

    pub async fn run_count(&self) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM runs").fetch_one(&self.pool).await.unwrap()
    }
}

pub fn spec_json() -> serde_json::Value {
    serde_json::json!({
        "label": "api test",
        "target": {"kind": "external", "base_url": "http://127.0.0.1:8000"},
        "model": "Qwen/Qwen3-8B",
        "dataset": {"kind": "sharegpt"},
        "num_prompts": 100,
        "load": {"max_concurrency": [1]}
    })
}

/// Serves `state` on a real socket (127.0.0.1, a free port), with client addresses
/// recorded as in `latlab serve`; returns its base URL.
pub async fn serve(state: AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// An app state like `latlab serve`'s, for `serve`.
pub fn state(pool: PgPool, token: Option<&str>) -> AppState {
    AppState::new(pool, "target/site", "127.0.0.1:0".parse().unwrap())
        .with_api_token(token.map(str::to_string))
}
