//! Server-rendered pages: complete HTML without JavaScript, security headers.

mod common;

use axum::http::StatusCode;
use common::{spec_json, TestApp};
use sqlx::PgPool;

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn home_shows_an_empty_state_then_the_runs(pool: PgPool) {
    let app = TestApp::new(pool);
    let home = app.get("/").await;
    assert_eq!(home.status, StatusCode::OK);
    assert!(home.content_type.starts_with("text/html"));
    assert!(home.body.contains("No runs yet") && home.body.contains("href=\"/runs/new\""), "{}", home.body);
    assert_eq!(home.headers["x-content-type-options"], "nosniff");
    assert_eq!(home.headers["x-frame-options"], "DENY");
    assert!(home.headers["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"));

    let id = app.post_json("/api/runs", &spec_json()).await.json()["run_ids"][0].as_i64().unwrap();
    let home = app.get("/").await;
    assert!(!home.body.contains("No runs yet"));
    assert!(home.body.contains(&format!("data-run-id=\"{id}\"")) && home.body.contains("api test"), "{}", home.body);
    let runs = app.get("/runs").await;
    assert!(runs.body.contains("queued"));
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn run_page_shows_settings_and_status(pool: PgPool) {
    let app = TestApp::new(pool);
    let id = app.post_json("/api/runs", &spec_json()).await.json()["run_ids"][0].as_i64().unwrap();
    let page = app.get(&format!("/runs/{id}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(&format!("Run #{id}: api test")), "{}", page.body);
    assert!(page.body.contains("status-queued") && page.body.contains("sharegpt × 100 prompts"), "{}", page.body);
    let missing = app.get("/runs/999999").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing.body.contains("Not found"));
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn new_run_form_has_every_field(pool: PgPool) {
    let app = TestApp::new(pool);
    let page = app.get("/runs/new").await;
    assert_eq!(page.status, StatusCode::OK);
    for name in ["target_kind", "base_url", "model_source", "model", "dataset_kind", "num_prompts", "max_concurrency", "request_rate", "seed", "ignore_eos"] {
        assert!(page.body.contains(&format!("name=\"form[{name}]\"")), "missing {name}");
    }
    assert!(page.body.contains("action=\"/sfn/create_runs"), "form must post without JavaScript");
}
