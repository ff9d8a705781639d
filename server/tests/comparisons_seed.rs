//! The seed study loaded on first start (once), its permalink with a server-rendered chart
//! for the view in the URL, the chart download, exports, and `POST /api/imports`.

mod common;

use axum::http::StatusCode;
use common::TestApp;
use server::seed::{SEED_SLUG, load};
use sqlx::PgPool;

async fn comparison_count(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM comparisons").fetch_one(pool).await.unwrap()
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_seed_study_loads_once_with_every_run_marked_imported(pool: PgPool) {
    assert!(load(&pool).await.unwrap());
    assert!(!load(&pool).await.unwrap(), "a restart must not load it again");
    let app = TestApp::new(pool.clone());
    assert_eq!(app.run_count().await, 25);
    assert_eq!(comparison_count(&pool).await, 1);
    let c = app.get(&format!("/api/comparisons/{SEED_SLUG}")).await.json();
    assert_eq!(c["title"], "Qwen3-8B on H100 (GPUStack study)");
    let runs = c["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 25);
    assert!(runs.iter().all(|r| r["status"] == "succeeded" && r["spec"]["target"]["kind"] == "imported"));
    // Published numbers, exactly: the optimized configuration at BS=1.
    assert_eq!(runs[21]["summary"]["tpot"]["mean_ms"], 2.67);
    assert_eq!(runs[21]["summary"]["itl"]["mean_ms"], 8.74);
    assert_eq!(c["view"]["ladder"]["steps"].as_array().unwrap().len(), 3);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_permalink_renders_the_chart_of_the_view_in_its_url(pool: PgPool) {
    load(&pool).await.unwrap();
    let app = TestApp::new(pool);
    let page = app.get(&format!("/c/{SEED_SLUG}?metric=tpot&p=99")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains("<svg") && page.body.contains("TPOT p99 (ms)"),
        "{}",
        &page.body[..2000.min(page.body.len())]
    );
    assert!(page.body.contains("imported"));
    assert!(page.body.contains("ITL (ms, chunk-level)"));
    // E2EL is not in the study's blocks: shown as missing, never as 0.
    let e2el = app.get(&format!("/c/{SEED_SLUG}/chart.svg?metric=e2el")).await;
    assert_eq!(e2el.status, StatusCode::OK);
    assert!(e2el.content_type.starts_with("image/svg+xml"));
    assert_eq!(e2el.body.matches(">\nmissing\n</text>").count(), 25);
    let ladder = app.get(&format!("/c/{SEED_SLUG}/chart.svg?chart=ladder&metric=tpot")).await;
    assert!(ladder.body.contains("study: +25.8% speed-up)"), "{}", ladder.body);
    let sweep = app.get(&format!("/c/{SEED_SLUG}/chart.svg?chart=sweep&metric=ttft")).await;
    assert_eq!(sweep.body.matches("<title>").count(), 8, "two sweeps of four concurrencies");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn exports_carry_every_run_and_leave_missing_numbers_empty(pool: PgPool) {
    load(&pool).await.unwrap();
    let app = TestApp::new(pool);
    let csv = app.get(&format!("/api/comparisons/{SEED_SLUG}/export.csv")).await;
    assert_eq!(csv.status, StatusCode::OK);
    let lines: Vec<&str> = csv.body.lines().collect();
    assert_eq!(lines.len(), 26);
    assert!(lines[0].contains("itl_chunk_mean_ms") && lines[0].contains("e2el_p99_ms"));
    assert!(
        lines[1].contains(",imported,vLLM,1x NVIDIA H100 SXM GPU,") && lines[1].ends_with(",,,"),
        "{}",
        lines[1]
    );
    let json = app.get(&format!("/api/comparisons/{SEED_SLUG}/export.json")).await.json();
    assert_eq!(json["runs"].as_array().unwrap().len(), 25);
}

/// A printed vLLM result block (data/fixtures: the one the parser's own tests use).
const BLOCK: &str = include_str!("../../data/fixtures/vllm_serving_result.txt");

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn imports_store_runs_and_bad_files_store_nothing(pool: PgPool) {
    let app = TestApp::new(pool.clone());
    let body = serde_json::json!({
        "format": "text", "content": format!("{BLOCK}\n{}", BLOCK.replace("concurrency:             4", "concurrency:             8")),
        "config": {"engine": "vLLM", "model": "Qwen/Qwen3-8B", "command": "vllm serve Qwen/Qwen3-8B", "hardware": "1x H100"}
    });
    let r = app.post_json("/api/imports", &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let ids: Vec<i64> = r.json()["run_ids"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    assert_eq!(ids.len(), 2);
    let slug = r.json()["comparison_slug"].as_str().unwrap().to_string();
    let run = app.get(&format!("/api/runs/{}", ids[1])).await.json();
    assert_eq!(run["status"], "succeeded");
    assert_eq!(run["spec"]["load"]["max_concurrency"][0], 8);
    assert_eq!(run["summary"]["ttft"]["mean_ms"], 64.0);
    assert!(app.get(&format!("/c/{slug}")).await.body.contains("TTFT mean (ms)"));

    let before = (app.run_count().await, comparison_count(&pool).await);
    let bad = [
        (
            serde_json::json!({"format": "text", "content": BLOCK.replace("44.40", "fast"), "config": {"engine": "vLLM", "model": "m"}}),
            "line 4",
        ),
        (
            serde_json::json!({"format": "text", "content": "no block here", "config": {"engine": "vLLM", "model": "m"}}),
            "no \"Serving Benchmark Result\" block",
        ),
        (
            serde_json::json!({"format": "text", "content": BLOCK, "config": {"engine": "vLLM"}}),
            "config.model",
        ),
        (
            serde_json::json!({"format": "vllm_json", "content": {"completed": 3}, "config": {"engine": "vLLM", "model": "m"}}),
            "\"duration\"",
        ),
        (
            serde_json::json!({"format": "text", "content": BLOCK, "config": {"engine": " ", "model": "m"}}),
            "target.engine",
        ),
    ];
    for (body, needle) in bad {
        let r = app.post_json("/api/imports", &body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(needle), "{needle:?} not in {msg:?}");
    }
    assert_eq!(
        (app.run_count().await, comparison_count(&pool).await),
        before,
        "a refused import stores nothing"
    );
}

/// A vLLM `--save-result` file with per-request lists gives records, hence a CDF; the seed
/// study's runs (summaries only) are named as having none.
#[sqlx::test(migrator = "db::MIGRATOR")]
async fn vllm_json_records_draw_a_latency_cdf(pool: PgPool) {
    let app = TestApp::new(pool);
    let save_result = serde_json::json!({
        "backend": "openai-chat", "model_id": "Qwen/Qwen3-8B", "num_prompts": 3, "request_rate": "inf", "max_concurrency": 1,
        "duration": 1.0, "completed": 3, "total_input_tokens": 30, "total_output_tokens": 9, "request_throughput": 3.0,
        "output_throughput": 9.0, "total_token_throughput": 39.0,
        "mean_ttft_ms": 20.0, "median_ttft_ms": 20.0, "std_ttft_ms": 8.1, "p99_ttft_ms": 29.8,
        "mean_tpot_ms": 5.0, "median_tpot_ms": 5.0, "std_tpot_ms": 0.0, "p99_tpot_ms": 5.0,
        "mean_itl_ms": 5.0, "median_itl_ms": 5.0, "std_itl_ms": 0.0, "p99_itl_ms": 5.0,
        "input_lens": [10, 10, 10], "output_lens": [3, 3, 3], "ttfts": [0.01, 0.02, 0.03],
        "itls": [[0.005, 0.005], [0.005, 0.005], [0.005, 0.005]], "errors": ["", "", ""]
    });
    let r = app
        .post_json("/api/imports", &serde_json::json!({"format": "vllm_json", "content": save_result, "config": {"engine": "vLLM", "label": "json import"}, "comparison_title": "CDF"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let slug = r.json()["comparison_slug"].as_str().unwrap().to_string();
    let id = r.json()["run_ids"][0].as_i64().unwrap();
    assert_eq!(app.get(&format!("/api/runs/{id}/requests")).await.json().as_array().unwrap().len(), 3);
    let svg = app.get(&format!("/c/{slug}/chart.svg?chart=cdf&metric=ttft")).await.body;
    assert!(svg.contains(&format!(">\n#{id} json import\n</text>")), "{svg}");
    assert!(svg.contains("<polyline"), "a CDF line");
    assert!(svg.contains(">\nTTFT (ms)\n</text>"));
    // The page renders the same CDF on the server.
    let page = app.get(&format!("/c/{slug}?chart=cdf")).await.body;
    assert!(page.contains("TTFT CDF"), "{page}");

    load(&pool_of(&app)).await.unwrap();
    let seed = app.get(&format!("/c/{SEED_SLUG}/chart.svg?chart=cdf")).await.body;
    assert!(seed.contains("no per-request records: 25 runs"), "{seed}");
}

fn pool_of(app: &TestApp) -> PgPool {
    app.pool.clone()
}

/// Different datasets, sampling and hardware warn; a configuration diff lists what differs;
/// a measured run on random weights is marked.
#[sqlx::test(migrator = "db::MIGRATOR")]
async fn unfair_comparisons_warn_and_the_config_diff_names_differences(pool: PgPool) {
    load(&pool).await.unwrap();
    let app = TestApp::new(pool);
    let seed = app.get(&format!("/api/comparisons/{SEED_SLUG}")).await.json();
    let vllm = seed["runs"][0]["id"].as_i64().unwrap();
    let body = serde_json::json!({
        "format": "text", "content": BLOCK,
        "config": {"engine": "vLLM", "model": "Qwen/Qwen3-8B", "hardware": "1x NVIDIA A100",
                   "dataset": {"kind": "random", "input_len": 128, "output_len": 128},
                   "sampling": {"ignore_eos": true, "temperature": 0.0}}
    });
    let other = app.post_json("/api/imports", &body).await.json()["run_ids"][0].as_i64().unwrap();
    let mut native = common::spec_json();
    native["target"] = serde_json::json!({"kind": "native", "model_source": "random:tiny"});
    let measured = app.post_json("/api/runs", &native).await.json()["run_ids"][0].as_i64().unwrap();
    let r = app
        .post_json(
            "/api/comparisons",
            &serde_json::json!({"title": "unfair", "run_ids": [vllm, other, measured]}),
        )
        .await;
    let slug = r.json()["slug"].as_str().unwrap().to_string();
    let page = app.get(&format!("/c/{slug}?baseline={vllm}&other={other}")).await.body;
    for needle in [
        "different datasets",
        "different sampling settings",
        "different hardware",
        "random weights",
        "Imported results sit beside runs latlab measured",
    ] {
        assert!(page.contains(needle), "{needle:?} missing from the page");
    }
    assert!(
        page.contains("Configuration diff")
            && page.contains("<code>dataset.kind</code>")
            && page.contains("<code>target.hardware</code>"),
        "{page}"
    );
    // Without a pair picked there is no diff table.
    assert!(!app.get(&format!("/c/{slug}")).await.body.contains("<code>dataset.kind</code>"));
}
