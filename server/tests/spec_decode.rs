//! Speculative decoding's accepted length, end to end on the web side: a stub engine on
//! 127.0.0.1 serves chat completions, `/metrics` counters and `/v1/engine/info` as
//! latlab-engine does; the worker's scrape reads the counters around the measured part;
//! the result is stored and shown on the run page, the comparison page and the API, with
//! a random draft's numbers labelled; a missing or garbled `/metrics` leaves the length
//! missing with a note while the run still succeeds. The native ladder is posted from the
//! form without JavaScript.

mod common;

use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bench_types::spec_decode::RANDOM_DRAFT_CAVEAT;
use bench_types::{RunSpec, RunStatus};
use common::TestApp;
use futures_util::stream::{self, StreamExt};
use server::worker::spec_scrape::SpecScrape;
use sqlx::PgPool;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

#[derive(Clone, Copy, PartialEq)]
enum Metrics {
    Counters,
    Garbled,
    Missing,
}

/// Counters as the engine keeps them (cumulative); each request adds its row-steps.
#[derive(Default)]
struct Engine {
    requests: u64,
    verify_steps: u64,
    emitted: u64,
}

#[derive(Clone)]
struct Stub {
    engine: Arc<Mutex<Engine>>,
    metrics: Metrics,
}

/// The two warm-up requests accept nothing (1 token per step); measured ones emit 10
/// tokens in 4 steps. So 2.5 is the measured part alone, anything else mixes warm-up in.
async fn chat(State(s): State<Stub>) -> Response {
    {
        let mut e = s.engine.lock().unwrap();
        let (steps, emitted) = if e.requests < 2 { (10, 10) } else { (4, 10) };
        e.requests += 1;
        e.verify_steps += steps;
        e.emitted += emitted;
    }
    let chunks = stream::iter(0..=8u32).map(|i| {
        let data = if i < 8 {
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": " the"}, "finish_reason": null}]})
        } else {
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": 8, "total_tokens": 16}})
        };
        Ok::<_, Infallible>(Event::default().data(data.to_string()))
    });
    Sse::new(chunks.chain(stream::once(async { Ok(Event::default().data("[DONE]")) }))).into_response()
}

async fn metrics(State(s): State<Stub>) -> Response {
    let e = s.engine.lock().unwrap();
    match s.metrics {
        // Every family typed, as engine-server/src/spec_metrics.rs writes them.
        Metrics::Counters => format!(
            "# TYPE latlab_spec_verify_steps_total counter\nlatlab_spec_verify_steps_total {}\n\
             # TYPE latlab_spec_emitted_tokens_total counter\nlatlab_spec_emitted_tokens_total {}\n\
             # TYPE latlab_spec_accepted_total counter\nlatlab_spec_accepted_total{{position=\"1\"}} {}\n\
             # TYPE latlab_spec_proposed_total counter\nlatlab_spec_proposed_total{{position=\"1\"}} {}\n\
             # TYPE latlab_spec_draft_seconds_total counter\nlatlab_spec_draft_seconds_total 0.5\n",
            e.verify_steps,
            e.emitted,
            e.emitted / 2,
            e.verify_steps
        )
        .into_response(),
        Metrics::Garbled => "<html><body>502 Bad Gateway</body></html>".into_response(),
        Metrics::Missing => axum::http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn engine_info() -> Json<serde_json::Value> {
    Json(
        serde_json::json!({"model": "tiny", "speculative": {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1,
        "num_draft_tokens": 4, "draft": {"source": "random:tiny-eagle3", "random_weights": true,
        "draft_vocab_size": 1024, "aux_layers": [2, 1, 0]}}}),
    )
}

async fn stub_engine(metrics_mode: Metrics) -> String {
    let stub = Stub { engine: Arc::default(), metrics: metrics_mode };
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/metrics", get(metrics))
        .route("/v1/engine/info", get(engine_info))
        .route("/v1/models", get(|| async { Json(serde_json::json!({"data": [{"id": "tiny"}]})) }))
        .with_state(stub);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn native_spec(label: &str) -> RunSpec {
    // The Qwen3 tokenizer setup fetched, by a path without '..' (specs may not climb).
    let tokenizer =
        std::fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/cache/qwen3/tokenizer.json"))
            .expect("scripts/fetch-assets.sh fetched the Qwen3 tokenizer");
    serde_json::from_value(serde_json::json!({
        "label": label,
        "target": {"kind": "native", "model_source": "random:tiny",
                   "speculative": {"algorithm": "eagle3", "draft_model": "random:tiny-eagle3"}},
        "model": "tiny",
        "tokenizer": tokenizer,
        "dataset": {"kind": "random", "input_len": 8, "output_len": 8},
        "num_prompts": 5, "warmup_requests": 2, "load": {"max_concurrency": [1]}, "request_timeout_s": 10,
    }))
    .unwrap()
}

/// What the worker does for a speculating native target, against the stub: the bench with
/// the scrape's hook, then the scrape at the end; stored as the worker stores it.
async fn run_and_store(pool: &PgPool, metrics_mode: Metrics, label: &str) -> i64 {
    let base = stub_engine(metrics_mode).await;
    let spec = native_spec(label);
    let scrape = SpecScrape::new(&base);
    let opts = bench::RunOptions { before_measuring: Some(scrape.hook()), ..Default::default() };
    let mut report = bench::run_benchmark(&spec, &base, opts).await.expect("the run succeeds");
    let bench_types::Target::Native(n) = &spec.target else { unreachable!() };
    let requested = n.speculative.as_ref().unwrap();
    report.speculative = Some(scrape.finish(requested, report.target_info.engine_info.as_ref()).await);

    let mut tx = pool.begin().await.unwrap();
    let id = db::runs::create(&mut tx, &[spec]).await.unwrap()[0];
    tx.commit().await.unwrap();
    db::runs::transition(pool, id, RunStatus::Queued, RunStatus::Running, None).await.unwrap();
    let end = db::results::RunEnd { status: RunStatus::Succeeded, note: None };
    db::results::store_report(pool, id, &report, &end).await.unwrap();
    id
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_measured_parts_accepted_length_is_stored_and_labelled_where_it_is_shown(pool: PgPool) {
    let id = run_and_store(&pool, Metrics::Counters, "eagle3 chain").await;
    let run = db::runs::get(&pool, id).await.unwrap().unwrap();
    let s = run.speculative.clone().expect("stored");
    assert_eq!(s.mean_accepted_length, Some(2.5), "warm-up excluded: (5 × 10) / (5 × 4)");
    assert_eq!((s.verify_steps, s.emitted_tokens), (Some(20.0), Some(50.0)));
    assert!(s.tree_reported && s.random_weights, "{s:?}");
    assert_eq!(s.by_position[0].rate(), Some(25.0 / 20.0));

    let app = TestApp::new(pool.clone());
    let page = app.get(&format!("/runs/{id}")).await.body;
    assert!(page.contains("Mean accepted length"), "{page}");
    assert!(page.contains(">2.50<"), "{page}");
    assert!(page.contains(RANDOM_DRAFT_CAVEAT), "the random draft's label is beside the number");
    assert!(page.contains("3 steps × topk 1, 4 draft tokens (a chain), as the engine reported it"), "{page}");
    assert!(page.contains("EAGLE-3, draft random:tiny-eagle3"), "the settings say what was asked");

    let api = app.get(&format!("/api/runs/{id}")).await.json();
    assert_eq!(api["speculative"]["mean_accepted_length"], 2.5);
    assert_eq!(api["speculative"]["caveat"], RANDOM_DRAFT_CAVEAT);

    let missing = run_and_store(&pool, Metrics::Garbled, "garbled").await;
    let reply = app
        .post_json("/api/comparisons", &serde_json::json!({"title": "eagle3", "run_ids": [id, missing]}))
        .await;
    let slug = reply.json()["slug"].as_str().unwrap().to_string();
    let page = app.get(&format!("/c/{slug}")).await.body;
    assert!(page.contains("Accepted length"), "{page}");
    assert!(page.contains("<span>2.50</span>") && page.contains("<span>missing</span>"), "{page}");
    assert!(page.contains(RANDOM_DRAFT_CAVEAT), "{page}");
    let api = app.get(&format!("/api/comparisons/{slug}")).await.json();
    assert_eq!(api["runs"][0]["speculative"]["caveat"], RANDOM_DRAFT_CAVEAT);
    // The exports carry it too: the CSV's last three columns, empty where it is missing.
    let csv = app.get(&format!("/api/comparisons/{slug}/export.csv")).await.body;
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].ends_with(",spec_tree,mean_accepted_length,spec_note"), "{}", lines[0]);
    let row = |id: i64| *lines.iter().find(|l| l.starts_with(&format!("{id},"))).expect("a row per run");
    assert!(row(id).ends_with(&format!(",3/1/4,2.5,{RANDOM_DRAFT_CAVEAT}")), "{}", row(id));
    assert!(row(missing).contains(",3/1/4,,"), "missing stays empty: {}", row(missing));
    let json = app.get(&format!("/api/comparisons/{slug}/export.json")).await.json();
    assert_eq!(json["runs"][0]["speculative"]["mean_accepted_length"], 2.5);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_missing_or_garbled_metrics_page_leaves_the_length_missing_with_a_note(pool: PgPool) {
    let app = TestApp::new(pool.clone());
    for (mode, why) in [(Metrics::Garbled, "not the Prometheus text format"), (Metrics::Missing, "HTTP 404")]
    {
        let id = run_and_store(&pool, mode, "no metrics").await;
        let run = db::runs::get(&pool, id).await.unwrap().unwrap();
        assert_eq!(run.status, RunStatus::Succeeded, "the run itself is fine");
        let s = run.speculative.unwrap();
        assert_eq!(s.mean_accepted_length, None);
        assert!(
            s.notes.iter().any(|n| n.starts_with("accepted length missing: ") && n.contains(why)),
            "{:?}",
            s.notes
        );
        assert!(s.tree_reported, "the engine info still says which tree ran");
        let page = app.get(&format!("/runs/{id}")).await.body;
        assert!(page.contains("data-testid=\"accepted-length\">missing<"), "{page}");
        assert!(page.contains("accepted length missing: "), "the note is on the page");
    }
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_native_ladder_is_one_comparison_from_the_form_without_javascript(pool: PgPool) {
    use axum::body::Body;
    use axum::http::Request;
    let app = TestApp::new(pool);
    let page = app.get("/runs/new").await.body;
    for name in [
        "speculative",
        "draft_model",
        "spec_num_steps",
        "spec_topk",
        "spec_num_draft_tokens",
        "native_ladder",
    ] {
        assert!(page.contains(&format!("name=\"form[{name}]\"")), "{name} is in the form");
    }
    let action = page.split("action=\"").nth(1).and_then(|s| s.split('"').next()).unwrap().to_string();
    let fields = [
        ("target_kind", "native"),
        ("model_source", "random:tiny"),
        ("device", "cpu"),
        ("max_batch", "8"),
        ("native_ladder", "on"),
        ("model", "Qwen/Qwen3-8B"),
        ("dataset_kind", "random"),
        ("input_len", "16"),
        ("output_len", "16"),
        ("num_prompts", "4"),
        ("max_concurrency", "1"),
    ];
    let body = fields
        .iter()
        .map(|(k, v)| format!("form%5B{k}%5D={}", v.replace(':', "%3A").replace('/', "%2F")))
        .collect::<Vec<_>>()
        .join("&");
    let req = Request::post(action.as_str())
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "text/html")
        .body(Body::from(body))
        .unwrap();
    let reply = app.send(req).await;
    assert!(reply.status.is_redirection(), "{} {}", reply.status, reply.body);
    let to = reply.headers["location"].to_str().unwrap().to_string();
    let slug = to
        .strip_prefix("/c/")
        .and_then(|s| s.strip_suffix("?chart=ladder&metric=tpot"))
        .unwrap_or_else(|| panic!("{to}"));
    let c = app.get(&format!("/api/comparisons/{slug}")).await.json();
    let labels: Vec<&str> =
        c["runs"].as_array().unwrap().iter().map(|r| r["spec"]["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "native ladder · bf16",
            "native ladder · FP8",
            "native ladder · FP8 + EAGLE-3 tree 4/4/16",
            "native ladder · FP8 + EAGLE-3 chain 3/1/4"
        ]
    );
    let tree = &c["runs"][2]["spec"]["target"]["speculative"];
    assert_eq!(
        (tree["num_steps"].as_u64(), tree["topk"].as_u64(), tree["num_draft_tokens"].as_u64()),
        (Some(4), Some(4), Some(16))
    );
    assert_eq!(tree["draft_model"], "random:tiny-eagle3");
    let chart = app.get(&to).await;
    assert_eq!(chart.status, 200);
    assert!(chart.body.contains("Optimization ladder"), "the ladder chart opens");
}
