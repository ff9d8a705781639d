//! `/api/comparisons` and `/healthz`.

mod common;

use axum::http::StatusCode;
use common::{TestApp, spec_json};
use sqlx::PgPool;

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_comparison_of_existing_runs_gets_a_permalink(pool: PgPool) {
    let app = TestApp::new(pool);
    let a = app.post_json("/api/runs", &spec_json()).await.json()["run_ids"][0].as_i64().unwrap();
    let b = app.post_json("/api/runs", &spec_json()).await.json()["run_ids"][0].as_i64().unwrap();
    let r = app
        .post_json(
            "/api/comparisons",
            &serde_json::json!({"title": "A vs B", "run_ids": [b, a], "view": {"metric": "ttft"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let slug = r.json()["slug"].as_str().unwrap().to_string();
    assert_eq!(r.json()["url"], format!("/c/{slug}"));
    let c = app.get(&format!("/api/comparisons/{slug}")).await.json();
    assert_eq!(c["runs"][0]["id"], b);
    assert_eq!(c["view"]["metric"], "ttft");
    // The permalink page renders the same runs server-side.
    let page = app.get(&format!("/c/{slug}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains("A vs B") && page.body.contains(&format!("data-run-id=\"{a}\"")),
        "{}",
        page.body
    );
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn bad_comparisons_are_refused_and_nothing_is_stored(pool: PgPool) {
    let app = TestApp::new(pool);
    let a = app.post_json("/api/runs", &spec_json()).await.json()["run_ids"][0].as_i64().unwrap();
    let cases = [
        ("run_ids", serde_json::json!({"title": "x", "run_ids": [a, 999]})),
        ("run_ids", serde_json::json!({"title": "x", "run_ids": []})),
        ("run_ids", serde_json::json!({"title": "x", "run_ids": [a, a]})),
        ("title", serde_json::json!({"title": " ", "run_ids": [a]})),
        ("view", serde_json::json!({"title": "x", "run_ids": [a], "view": [1]})),
    ];
    for (field, body) in cases {
        let r = app.post_json("/api/comparisons", &body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        assert_eq!(r.json()["error"]["fields"][0]["field"], field, "{}", r.body);
    }
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM comparisons").fetch_one(&app.pool).await.unwrap();
    assert_eq!(n, 0);
    assert_eq!(app.get("/api/comparisons/doesnotexist").await.status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn healthz_reports_the_database(pool: PgPool) {
    let app = TestApp::new(pool);
    let r = app.get("/healthz").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["database"], "ok");
    // A database that does not answer (nothing listens on port 1). Not done by closing
    // the test's own pool: sqlx::test pools borrow from one shared parent pool, and
    // closing a child starved the other tests of connections.
    let dead = sqlx::postgres::PgPoolOptions::new()
        .acquire_timeout(std::time::Duration::from_millis(500))
        .connect_lazy("postgres://latlab@127.0.0.1:1/none")
        .unwrap();
    let app = TestApp::new(dead);
    let r = app.get("/healthz").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    assert_eq!(r.json()["status"], "unavailable");
}
