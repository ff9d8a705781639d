//! Server-rendered pages: complete HTML without JavaScript, security headers.

mod common;

use axum::http::StatusCode;
use common::{TestApp, spec_json};
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
    assert!(
        home.body.contains(&format!("data-run-id=\"{id}\"")) && home.body.contains("api test"),
        "{}",
        home.body
    );
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
    assert!(
        page.body.contains("status-queued") && page.body.contains("sharegpt × 100 prompts"),
        "{}",
        page.body
    );
    let missing = app.get("/runs/999999").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing.body.contains("Not found"));
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn new_run_form_has_every_field(pool: PgPool) {
    let app = TestApp::new(pool);
    let page = app.get("/runs/new").await;
    assert_eq!(page.status, StatusCode::OK);
    for name in [
        "target_kind",
        "base_url",
        "model_source",
        "model",
        "dataset_kind",
        "num_prompts",
        "max_concurrency",
        "request_rate",
        "seed",
        "ignore_eos",
    ] {
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
    let enc = |s: &str| {
        s.replace('%', "%25").replace(' ', "+").replace(',', "%2C").replace(':', "%3A").replace('/', "%2F")
    };
    fields.iter().map(|(k, v)| format!("form%5B{k}%5D={}", enc(v))).collect::<Vec<_>>().join("&")
}

/// Posts `body` to the new-run form's own action (taken from the page, as a browser does)
/// and follows the redirect to the new run.
async fn post_form(app: &TestApp, body: String) -> (i64, bench_types::RunSpec) {
    use axum::body::Body;
    use axum::http::Request;
    let page = app.get("/runs/new").await.body;
    let action =
        page.split("action=\"").nth(1).and_then(|s| s.split('"').next()).expect("the form has an action");
    let req = Request::post(action)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "text/html")
        .body(Body::from(body))
        .unwrap();
    let reply = app.send(req).await;
    assert!(reply.status.is_redirection(), "{} {}", reply.status, reply.body);
    let to = reply.headers["location"].to_str().unwrap().to_string();
    let id: i64 = to.strip_prefix("/runs/").unwrap_or_else(|| panic!("redirected to {to}")).parse().unwrap();
    let spec =
        serde_json::from_value(app.get(&format!("/api/runs/{id}")).await.json()["spec"].clone()).unwrap();
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
    assert!(
        !page.body.contains("tiny FP8")
            && !page.body.contains("block scales")
            && page.body.contains("as stored"),
        "{}",
        page.body
    );
    let list = app.get("/runs").await;
    assert!(list.body.contains("native random:tiny FP8"), "{}", list.body);
}

/// A printed vLLM result block, as pasted into the import form (data/fixtures).
const VLLM_BLOCK: &str = include_str!("../../data/fixtures/vllm_serving_result.txt");

/// A `multipart/form-data` body as a browser sends the import form: text fields, then the
/// file part (empty and nameless when no file was chosen).
fn multipart_body(fields: &[(&str, &str)], file: Option<(&str, &str)>) -> (String, String) {
    let boundary = "----latlabTestBoundary7MA4YWxk";
    let mut body = String::new();
    for (k, v) in fields {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
        ));
    }
    let (name, content) = file.unwrap_or(("", ""));
    body.push_str(&format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n{content}\r\n--{boundary}--\r\n"
    ));
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Posts the import form to the action its page names, as a browser without JavaScript does.
async fn post_import(app: &TestApp, fields: &[(&str, &str)], file: Option<(&str, &str)>) -> common::Reply {
    use axum::body::Body;
    use axum::http::Request;
    let page = app.get("/import").await.body;
    let form = page.split("<form").nth(1).expect("the page has a form");
    let action =
        form.split("action=\"").nth(1).and_then(|s| s.split('"').next()).expect("the form has an action");
    assert!(form.contains("enctype=\"multipart/form-data\""), "{form}");
    let (content_type, body) = multipart_body(fields, file);
    app.send(
        Request::post(action)
            .header("content-type", content_type)
            .header("accept", "text/html")
            .body(Body::from(body))
            .unwrap(),
    )
    .await
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_import_page_renders_and_is_linked(pool: PgPool) {
    let app = TestApp::new(pool);
    let page = app.get("/import").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Import results"), "{}", page.body);
    for name in [
        "engine",
        "model",
        "label",
        "hardware",
        "engine_version",
        "optimization",
        "command",
        "source",
        "comparison_title",
    ] {
        assert!(page.body.contains(&format!("name=\"{name}\"")), "missing {name}");
    }
    assert!(page.body.contains("type=\"file\"") && page.body.contains("<textarea"), "{}", page.body);
    assert!(page.body.contains("action=\"/import\"") && page.body.contains("method=\"post\""));
    assert!(app.get("/").await.body.contains("href=\"/import\""), "the nav links the import page");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn pasting_a_vllm_block_imports_a_run_and_lands_on_it(pool: PgPool) {
    let app = TestApp::new(pool);
    let before = app.run_count().await;
    let r = post_import(
        &app,
        &[
            ("text", VLLM_BLOCK),
            ("engine", "vLLM"),
            ("model", "Qwen/Qwen3-8B"),
            ("label", "pasted c4"),
            ("hardware", "1x H100"),
            ("source", ""),
        ],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let to = r.headers["location"].to_str().unwrap().to_string();
    let id: i64 = to.strip_prefix("/runs/").unwrap_or_else(|| panic!("redirected to {to}")).parse().unwrap();
    assert_eq!(app.run_count().await, before + 1);
    let run = app.get(&format!("/api/runs/{id}")).await.json();
    assert_eq!(run["status"], "succeeded");
    assert_eq!(run["spec"]["label"], "pasted c4");
    assert_eq!(run["spec"]["target"]["kind"], "imported");
    assert_eq!(run["spec"]["target"]["engine"], "vLLM");
    assert_eq!(run["spec"]["target"]["hardware"], "1x H100");
    assert_eq!(run["spec"]["target"]["source"], "upload", "an empty field means the default");
    assert_eq!(run["spec"]["load"]["max_concurrency"][0], 4);
    assert_eq!(run["summary"]["ttft"]["mean_ms"], 64.0);
    assert_eq!(app.get(&to).await.status, StatusCode::OK);

    // A file works the same; two blocks make a comparison, and the form lands there.
    let two = format!(
        "{VLLM_BLOCK}\n{}",
        VLLM_BLOCK.replace("concurrency:             4", "concurrency:             8")
    );
    let r = post_import(
        &app,
        &[("text", ""), ("engine", "vLLM"), ("model", "Qwen/Qwen3-8B")],
        Some(("sweep.txt", &two)),
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let to = r.headers["location"].to_str().unwrap().to_string();
    assert!(to.starts_with("/c/"), "{to}");
    assert_eq!(app.run_count().await, before + 3);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_refused_import_shows_the_error_keeps_the_input_and_stores_nothing(pool: PgPool) {
    let app = TestApp::new(pool);
    let before = app.run_count().await;
    let garbage = "this is not <a> result block";
    let r = post_import(
        &app,
        &[("text", garbage), ("engine", "vLLM"), ("model", "my/model"), ("label", "kept label")],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(r.content_type.starts_with("text/html"), "{}", r.content_type);
    // The API's message, next to the form.
    let error = r
        .body
        .split("data-testid=\"import-error\"")
        .nth(1)
        .and_then(|s| s.split_once('>'))
        .and_then(|(_, s)| s.split("</p>").next())
        .unwrap_or("");
    assert!(
        error.starts_with("import refused")
            && error.replace("&quot;", "\"").contains("no \"Serving Benchmark Result\" block"),
        "{}",
        r.body
    );
    // What was entered is still there (the pasted text escaped, as the textarea's content).
    assert!(r.body.contains("this is not &lt;a&gt; result block</textarea>"), "{}", r.body);
    assert!(r.body.contains("value=\"kept label\"") && r.body.contains("value=\"my/model\""), "{}", r.body);

    // The API's checks of the configuration, and the form's own.
    let r = post_import(&app, &[("text", VLLM_BLOCK), ("engine", "vLLM")], None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("config.model"), "{}", r.body);
    let r = post_import(&app, &[("text", ""), ("engine", "vLLM")], None).await;
    assert!(r.body.contains("choose a file"), "{}", r.body);
    let r = post_import(
        &app,
        &[("text", VLLM_BLOCK), ("engine", "vLLM"), ("model", "m")],
        Some(("r.txt", VLLM_BLOCK)),
    )
    .await;
    assert!(r.body.contains("not both"), "{}", r.body);
    let r = post_import(&app, &[("text", ""), ("engine", "vLLM")], Some(("result.json", "{\"completed\": ")))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body.contains("result.json is not valid JSON") && r.body.contains("choose it again"),
        "{}",
        r.body
    );
    assert_eq!(app.run_count().await, before, "a refused import stores nothing");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn importing_from_the_form_needs_the_token(pool: PgPool) {
    use axum::body::Body;
    use axum::http::Request;
    let token = "test-token-0123456789abcdef";
    let app = TestApp::with_token(pool, Some(token));
    let (content_type, body) =
        multipart_body(&[("text", VLLM_BLOCK), ("engine", "vLLM"), ("model", "m")], None);
    let req = |extra: Option<(&str, String)>| {
        let mut b =
            Request::post("/import").header("content-type", &content_type).header("host", "127.0.0.1:3000");
        if let Some((k, v)) = extra {
            b = b.header(k, v);
        }
        b.body(Body::from(body.clone())).unwrap()
    };
    assert_eq!(app.send(req(None)).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(app.run_count().await, 0);
    let r = app.send(req(Some(("authorization", format!("Bearer {token}"))))).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(app.run_count().await, 1);

    // A signed-in browser: the session cookie, from latlab's own page only.
    let login = Request::post("/login")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(format!("token={token}")))
        .unwrap();
    let set = app.send(login).await.headers["set-cookie"].to_str().unwrap().to_string();
    let cookie = set.split(';').next().unwrap().to_string();
    let from = |origin: &str| {
        Request::post("/import")
            .header("content-type", &content_type)
            .header("host", "127.0.0.1:3000")
            .header("cookie", &cookie)
            .header("origin", origin)
            .body(Body::from(body.clone()))
            .unwrap()
    };
    assert_eq!(app.send(from("http://evil.test")).await.status, StatusCode::FORBIDDEN);
    assert_eq!(app.run_count().await, 1);
    assert_eq!(app.send(from("http://127.0.0.1:3000")).await.status, StatusCode::SEE_OTHER);
    assert_eq!(app.run_count().await, 2);
}
