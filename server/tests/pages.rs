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

/// The new-run form as a browser without JavaScript posts it: every field, url-encoded.
fn native_form_body(quantization: Option<&str>) -> String {
    let mut fields = vec![
        ("target_kind", "native"),
        ("base_url", "http://127.0.0.1:8000"),
        ("api_key_env", ""),
        ("model_source", "random:tiny"),
        ("device", "cpu"),
        ("max_batch", "8"),
        ("presets", "vllm-bf16, sglang-bf16"),
        ("model", "Qwen/Qwen3-8B"),
        ("backend", "openai-chat"),
        ("dataset_kind", "random"),
        ("dataset_path", ""),
        ("input_len", "16"),
        ("output_len", "8"),
        ("num_prompts", "4"),
        ("seed", "0"),
        ("max_concurrency", "1"),
        ("request_rate", ""),
        ("burstiness", "1"),
        ("warmup_requests", "0"),
        ("request_timeout_s", "600"),
        ("temperature", "0"),
        ("label", "form post"),
    ];
    if let Some(q) = quantization {
        fields.push(("quantization", q));
    }
    let enc = |s: &str| s.replace('%', "%25").replace(' ', "+").replace(',', "%2C").replace(':', "%3A").replace('/', "%2F");
    fields.iter().map(|(k, v)| format!("form%5B{k}%5D={}", enc(v))).collect::<Vec<_>>().join("&")
}

/// Posts `body` to the new-run form's own action (taken from the page, as a browser does)
/// and follows the redirect to the new run.
async fn post_form(app: &TestApp, body: String) -> (i64, bench_types::RunSpec) {
    use axum::body::Body;
    use axum::http::Request;
    let page = app.get("/runs/new").await.body;
    let action = page.split("action=\"").nth(1).and_then(|s| s.split('"').next()).expect("the form has an action");
    let req = Request::post(action)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "text/html")
        .body(Body::from(body))
        .unwrap();
    let reply = app.send(req).await;
    assert!(reply.status.is_redirection(), "{} {}", reply.status, reply.body);
    let to = reply.headers["location"].to_str().unwrap().to_string();
    let id: i64 = to.strip_prefix("/runs/").unwrap_or_else(|| panic!("redirected to {to}")).parse().unwrap();
    let spec = serde_json::from_value(app.get(&format!("/api/runs/{id}")).await.json()["spec"].clone()).unwrap();
    (id, spec)
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_form_posts_native_weights_without_javascript(pool: PgPool) {
    use bench_types::{Quantization, Target};
    let app = TestApp::new(pool);
    let page = app.get("/runs/new").await;
    assert!(page.body.contains("name=\"form[quantization]\""), "the Weights control is in the form");
    assert!(page.body.contains("FP8 (128x128 block scales, quantized at load)"), "{}", page.body);
    let quant = |spec: &bench_types::RunSpec| match &spec.target {
        Target::Native(n) => n.quantization,
        t => panic!("not native: {t:?}"),
    };

    // The default choice, and a client that sends no such field, stay bf16.
    let (plain, spec) = post_form(&app, native_form_body(Some("none"))).await;
    assert_eq!(quant(&spec), Quantization::None);
    let (_, spec) = post_form(&app, native_form_body(None)).await;
    assert_eq!(quant(&spec), Quantization::None);

    // FP8 selected: stored, and shown where the run's target is.
    let (fp8, spec) = post_form(&app, native_form_body(Some("fp8"))).await;
    assert_eq!(quant(&spec), Quantization::Fp8);
    let page = app.get(&format!("/runs/{fp8}")).await;
    assert!(page.body.contains("native random:tiny FP8"), "{}", page.body);
    assert!(page.body.contains("FP8 (128x128 block scales"), "{}", page.body);
    let page = app.get(&format!("/runs/{plain}")).await;
    assert!(!page.body.contains("tiny FP8") && !page.body.contains("block scales") && page.body.contains("as stored"), "{}", page.body);
    let list = app.get("/runs").await;
    assert!(list.body.contains("native random:tiny FP8"), "{}", list.body);
}
