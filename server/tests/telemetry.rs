//! Server telemetry through a real `latlab worker`: a stub target on 127.0.0.1 whose
//! `/metrics` changes as requests run (vLLM's names) gets several samples stored with the
//! run as it goes (in batches, before the run ends), and its page plots them; a target without `/metrics` still succeeds, and its page
//! says why there is nothing; a comparison overlays one series, and names a bad one (400).

mod common;

use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bench_types::RunStatus;
use bench_types::telemetry::Series;
use common::fake_openai::{fresh_database, start as target_without_metrics};
use common::processes::{engine_user, latlab_command};
use futures_util::stream::{self, StreamExt};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What the stub's `/metrics` reports: requests in flight and tokens streamed so far.
#[derive(Clone, Default)]
struct Engine {
    running: Arc<AtomicU64>,
    generated: Arc<AtomicU64>,
}

/// Streams 8 tokens, 60 ms apart, so that a run lasts long enough to be sampled.
async fn chat(State(e): State<Engine>) -> Response {
    e.running.fetch_add(1, Ordering::SeqCst);
    let chunks = stream::iter(0..=8u32).then(move |i| {
        let e = e.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(60)).await;
            let data = if i < 8 {
                e.generated.fetch_add(1, Ordering::SeqCst);
                serde_json::json!({"choices": [{"index": 0, "delta": {"content": "hi "}, "finish_reason": null}]})
            } else {
                e.running.fetch_sub(1, Ordering::SeqCst);
                serde_json::json!({"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": 8, "total_tokens": 16}})
            };
            Ok::<_, Infallible>(Event::default().data(data.to_string()))
        }
    });
    Sse::new(chunks.chain(stream::once(async { Ok(Event::default().data("[DONE]")) }))).into_response()
}

async fn metrics(State(e): State<Engine>) -> String {
    let (running, generated) = (e.running.load(Ordering::SeqCst), e.generated.load(Ordering::SeqCst));
    format!(
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n\
         # TYPE vllm:num_requests_running gauge\n\
         vllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} {running}.0\n\
         # TYPE vllm:num_requests_waiting gauge\n\
         vllm:num_requests_waiting{{engine=\"0\",model_name=\"m\"}} 0.0\n\
         # TYPE vllm:kv_cache_usage_perc gauge\n\
         vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"m\"}} {}\n\
         # TYPE vllm:generation_tokens_total counter\n\
         vllm:generation_tokens_total{{engine=\"0\",model_name=\"m\"}} {generated}.0\n",
        running as f64 * 0.1
    )
}

async fn stub_target() -> String {
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/metrics", get(metrics))
        .route("/v1/models", get(|| async { Json(serde_json::json!({"data": [{"id": "m"}]})) }))
        .with_state(Engine::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn spec(base_url: &str, prompts: u32) -> bench_types::RunSpec {
    serde_json::from_value(serde_json::json!({
        "target": {"kind": "external", "base_url": base_url}, "model": "m",
        "dataset": {"kind": "random", "input_len": 16, "output_len": 8}, "num_prompts": prompts,
        "load": {"max_concurrency": [2]}, "sampling": {"ignore_eos": true}, "request_timeout_s": 10,
    }))
    .unwrap()
}

async fn finished(pool: &sqlx::PgPool, id: i64) -> bench_types::RunView {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let r = db::runs::get(pool, id).await.unwrap().unwrap();
        if r.status.is_terminal() {
            return r;
        }
        assert!(Instant::now() < deadline, "run {id} never finished: {r:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How many samples of run `id` the database held while the run still ran: read before
/// its status, so a non-terminal status proves they were written before it ended.
async fn stored_while_running(pool: &sqlx::PgPool, id: i64) -> usize {
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut most = 0;
    loop {
        let points = db::telemetry::for_run(pool, id).await.unwrap().points.len();
        let r = db::runs::get(pool, id).await.unwrap().unwrap();
        if r.status.is_terminal() || Instant::now() > deadline {
            return most;
        }
        most = most.max(points);
        if most > 0 && r.status == RunStatus::Running {
            return most;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The worker process, stopped however the test ends (a failed assertion included).
struct Worker(std::process::Child);

impl Drop for Worker {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_runs_server_telemetry_is_sampled_stored_and_plotted_and_a_missing_metrics_page_is_a_note() {
    let url = fresh_database(&format!("latlab_telemetry_{}", std::process::id())).await;
    let pool = db::connect(&url, 4).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let worker = Worker(
        latlab_command("worker", &url)
            .env("LATLAB_DATA_DIR", tmp.path())
            .env("LATLAB_ENGINE_USER", engine_user())
            .env("LATLAB_TELEMETRY_S", "0.1")
            .env("LATLAB_TELEMETRY_FLUSH_S", "0.3")
            .spawn()
            .unwrap(),
    );
    let create = |s| {
        let pool = pool.clone();
        async move { server::store::create_runs(&pool, s).await.unwrap().run_ids[0] }
    };

    // 12 requests of about 0.5 s, two at a time: about 3 s, sampled every 0.1 s and
    // written every 0.3 s.
    let sampled = create(spec(&stub_target().await, 12)).await;
    let stored = stored_while_running(&pool, sampled).await;
    assert!(stored > 0, "samples are in the database before the run ends");
    assert_eq!(finished(&pool, sampled).await.status, RunStatus::Succeeded);
    let t = db::telemetry::for_run(&pool, sampled).await.unwrap();
    assert!(t.collected);
    let of = |s: Series| t.points.iter().filter(|p| p.series == s).collect::<Vec<_>>();
    let running = of(Series::RunningRequests);
    assert!(running.len() >= 5, "several samples: {running:?}");
    assert!(running.iter().any(|p| p.value >= 1.0), "it saw requests running: {running:?}");
    assert!(running.windows(2).all(|w| w[0].t_s < w[1].t_s), "in time order");
    assert!(running.iter().any(|p| p.t_s > 0.5), "times are seconds since the measured start");
    assert!(of(Series::KvCacheUsagePct).iter().all(|p| (0.0..=100.0).contains(&p.value)));
    assert!(of(Series::GenerationTokensPerS).iter().any(|p| p.value > 0.0), "the counter became a rate");
    assert!(t.points.iter().all(|p| !p.series.is_gpu()), "an external target's host GPUs are not its own");
    assert!(t.notes.iter().any(|n| n.starts_with("GPUs not sampled")), "{:?}", t.notes);

    let app = common::TestApp::new(pool.clone());
    let page = app.get(&format!("/runs/{sampled}")).await.body;
    assert!(page.contains("Server telemetry"), "{page}");
    assert!(page.contains("data-series=\"running_requests\""), "{page}");
    assert!(page.contains("seconds since the measured start"), "{page}");
    assert!(page.contains("<title>target: "), "points carry hover titles");
    // The hydration data escapes '<' as \u003c: count what follows it.
    let drawn: usize = page
        .split("class=\"chart chart-telemetry\"")
        .skip(1)
        .map(|c| c.split("</svg>").next().unwrap_or_default().matches("title>target: ").count())
        .sum();
    assert_eq!(
        page.matches("title>target: ").count(),
        drawn,
        "each chart travels once, not again in the hydration data"
    );

    // No /metrics: the run is fine, the page says why there is no series.
    let (plain, _) = target_without_metrics().await;
    let bare = create(spec(&plain, 2)).await;
    assert_eq!(finished(&pool, bare).await.status, RunStatus::Succeeded);
    let t = db::telemetry::for_run(&pool, bare).await.unwrap();
    assert!(t.collected && t.points.is_empty(), "{t:?}");
    let page = app.get(&format!("/runs/{bare}")).await.body;
    assert!(
        page.contains("no server-side series: ") && page.contains("/metrics answered HTTP 404"),
        "{page}"
    );
    assert!(!page.contains("data-series="), "no chart without samples");

    // A comparison overlays one series across its runs; a bad one is named, with a 400.
    let reply = app
        .post_json("/api/comparisons", &serde_json::json!({"title": "telemetry", "run_ids": [sampled, bare]}))
        .await;
    let slug = reply.json()["slug"].as_str().unwrap().to_string();
    let r = app.get(&format!("/c/{slug}?series=running_requests")).await;
    assert_eq!(r.status, axum::http::StatusCode::OK);
    assert!(r.body.contains("running requests") && r.body.contains(&format!("#{sampled}")), "{}", r.body);
    let r = app.get(&format!("/c/{slug}?series=vllm:num_requests_running")).await;
    assert_eq!(r.status, axum::http::StatusCode::BAD_REQUEST);
    assert!(
        r.body.contains("unknown series \"vllm:num_requests_running\"; one of running_requests"),
        "{}",
        r.body
    );

    drop(worker);
    pool.close().await;
}
