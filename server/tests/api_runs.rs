//! `/api/runs` through the whole router against a real Postgres.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{TestApp, spec_json};
use sqlx::PgPool;

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_valid_spec_creates_a_queued_run(pool: PgPool) {
    let app = TestApp::new(pool);
    let r = app.post_json("/api/runs", &spec_json()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["run_ids"][0].as_i64().unwrap();
    assert!(r.json()["comparison_slug"].is_null());
    let got = app.get(&format!("/api/runs/{id}")).await;
    assert_eq!(got.status, StatusCode::OK);
    let v = got.json();
    assert_eq!(v["status"], "queued");
    assert_eq!(v["spec"]["model"], "Qwen/Qwen3-8B");
    // Defaults filled in and stored, so the run records exactly what it will do.
    assert_eq!(v["spec"]["sampling"]["temperature"], 0.0);
    assert_eq!(v["spec"]["request_timeout_s"], 600.0);
    let list = app.get("/api/runs").await.json();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(app.get(&format!("/api/runs/{id}/requests")).await.json(), serde_json::json!([]));
    assert_eq!(
        app.get(&format!("/api/runs/{id}/target")).await.status,
        StatusCode::NOT_FOUND,
        "no result yet"
    );
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_sweep_creates_one_run_per_value_and_a_comparison(pool: PgPool) {
    let app = TestApp::new(pool);
    let mut spec = spec_json();
    spec["load"]["max_concurrency"] = serde_json::json!([1, 2, 4, 8]);
    let r = app.post_json("/api/runs", &spec).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let ids: Vec<i64> = r.json()["run_ids"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(ids.len(), 4);
    let slug = r.json()["comparison_slug"].as_str().unwrap().to_string();
    let c = app.get(&format!("/api/comparisons/{slug}")).await.json();
    let conc: Vec<i64> = c["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["spec"]["load"]["max_concurrency"][0].as_i64().unwrap())
        .collect();
    assert_eq!(conc, vec![1, 2, 4, 8]);
    assert_eq!(c["title"], "api test");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn bad_inputs_get_400_naming_the_field_and_store_nothing(pool: PgPool) {
    let app = TestApp::new(pool);
    let cases: Vec<(&str, serde_json::Value)> = vec![
        ("num_prompts", {
            let mut s = spec_json();
            s["num_prompts"] = 0.into();
            s
        }),
        ("num_prompts", {
            let mut s = spec_json();
            s["num_prompts"] = (-3).into();
            s
        }),
        ("load.max_concurrency", {
            let mut s = spec_json();
            s["load"]["max_concurrency"] = serde_json::json!([1, 100000]);
            s
        }),
        ("load.request_rate", {
            let mut s = spec_json();
            s["load"]["request_rate"] = (-1.0).into();
            s
        }),
        ("target.base_url", {
            let mut s = spec_json();
            s["target"]["base_url"] = "file:///etc/passwd".into();
            s
        }),
        ("dataset.path", {
            let mut s = spec_json();
            s["dataset"] = serde_json::json!({"kind": "jsonl", "path": "x; rm -rf /"});
            s
        }),
        ("model", {
            let mut s = spec_json();
            s["model"] = "".into();
            s
        }),
        ("num_promptz", {
            let mut s = spec_json();
            s["num_promptz"] = 5.into();
            s
        }),
        ("target", {
            let mut s = spec_json();
            s["target"]["kind"] = "warp-drive".into();
            s
        }),
        ("target.extra_args", {
            let mut s = spec_json();
            s["target"] = serde_json::json!({"kind": "launched", "engine": "sglang", "model": "Qwen/Qwen3-8B", "extra_args": ["--port", "1"]});
            s
        }),
        ("target.model", {
            let mut s = spec_json();
            s["target"] =
                serde_json::json!({"kind": "launched", "engine": "vllm", "model": "Qwen/Qwen3-8B && reboot"});
            s
        }),
        ("target.speculative.num_steps", {
            let mut s = spec_json();
            s["target"] = serde_json::json!({"kind": "launched", "engine": "sglang", "model": "m", "speculative": {"algorithm": "eagle3", "draft_model": "d", "num_steps": 100000}});
            s
        }),
    ];
    for (field, body) in cases {
        let r = app.post_json("/api/runs", &body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{field}: {}", r.body);
        let v = r.json();
        let fields: Vec<String> = v["error"]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["field"].as_str().unwrap().to_string())
            .collect();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            fields.iter().any(|f| f == field) || message.contains(field),
            "{field} not named: {}",
            r.body
        );
    }
    assert_eq!(app.run_count().await, 0, "nothing stored");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn malformed_bodies_are_refused_clearly(pool: PgPool) {
    let app = TestApp::new(pool);
    let not_json = app
        .send(
            Request::post("/api/runs")
                .header("content-type", "application/json")
                .body(Body::from("{oops"))
                .unwrap(),
        )
        .await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST);
    assert!(
        not_json.json()["error"]["message"].as_str().unwrap().contains("invalid JSON"),
        "{}",
        not_json.body
    );
    let wrong_type = app
        .send(
            Request::post("/api/runs")
                .header("content-type", "text/plain")
                .body(Body::from(spec_json().to_string()))
                .unwrap(),
        )
        .await;
    assert_eq!(wrong_type.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let huge = "x".repeat(server::router::MAX_BODY_BYTES + 10);
    let too_big = app
        .send(
            Request::post("/api/runs")
                .header("content-type", "application/json")
                .body(Body::from(huge))
                .unwrap(),
        )
        .await;
    assert_eq!(too_big.status, StatusCode::PAYLOAD_TOO_LARGE);
    // Imports take result files of several MiB; they are still checked, as JSON.
    let big_import = format!("{{\"pad\": \"{}\"}}", "x".repeat(3 << 20));
    let r = app
        .send(
            Request::post("/api/imports")
                .header("content-type", "application/json")
                .body(Body::from(big_import))
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "a 3 MiB import is read, then refused for its content");
    assert_eq!(app.run_count().await, 0);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn unknown_and_malformed_ids(pool: PgPool) {
    let app = TestApp::new(pool);
    let r = app.get("/api/runs/12345").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.json()["error"]["message"], "no run with id 12345");
    assert_eq!(app.get("/api/runs/abc").await.status, StatusCode::BAD_REQUEST);
    assert_eq!(app.get("/api/runs/12345/requests").await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/api/runs?limit=0").await.status, StatusCode::BAD_REQUEST);
    assert_eq!(app.get("/api/nothing-here").await.status, StatusCode::NOT_FOUND);
}
