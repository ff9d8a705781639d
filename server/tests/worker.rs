//! The run queue end to end with real processes: a `latlab worker` claims a run against
//! a fake OpenAI server, is killed with SIGKILL mid-run, and the run becomes
//! `interrupted` with nothing stored; a second worker then runs the next run to the end.

mod common;

use axum::response::sse::{Event, Sse};
use axum::routing::{get, post};
use axum::{Json, Router};
use bench_types::{RunStatus, RunView};
use common::processes::{latlab_command, wait_for_run};
use futures_util::stream::{self, Stream, StreamExt};
use std::convert::Infallible;
use std::process::Child;
use std::time::Duration;

/// Streams 30 one-token chunks; model "slow" waits 200 ms between them, others 1 ms.
async fn chat(Json(body): Json<serde_json::Value>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let gap = if body["model"] == "slow" { 200 } else { 1 };
    let n = 30u32;
    let chunks = stream::iter(0..=n).then(move |i| async move {
        tokio::time::sleep(Duration::from_millis(gap)).await;
        let data = if i < n {
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": "hi "}, "finish_reason": null}]})
        } else {
            serde_json::json!({"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": n, "total_tokens": n + 8}})
        };
        Ok(Event::default().data(data.to_string()))
    });
    Sse::new(chunks.chain(stream::once(async { Ok(Event::default().data("[DONE]")) })))
}

async fn fake_openai() -> String {
    let app = Router::new().route("/v1/chat/completions", post(chat)).route(
        "/v1/models",
        get(|| async {
            Json(serde_json::json!({"object": "list", "data": [{"id": "slow"}, {"id": "fast"}]}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// `base` with its database name replaced (the part of the path before any `?`).
fn with_database(base: &str, name: &str) -> String {
    let (head, query) =
        base.split_once('?').map(|(h, q)| (h, format!("?{q}"))).unwrap_or((base, String::new()));
    let cut = head.rfind('/').expect("a database URL has a path");
    format!("{}/{name}{query}", &head[..cut])
}

fn spec(base_url: &str, model: &str, prompts: u32) -> serde_json::Value {
    serde_json::json!({
        "target": {"kind": "external", "base_url": base_url},
        "model": model,
        "dataset": {"kind": "random", "input_len": 16, "output_len": 30},
        "num_prompts": prompts,
        "load": {"max_concurrency": [1]},
        "sampling": {"ignore_eos": true},
    })
}

fn start_worker(url: &str) -> Child {
    latlab_command("worker", url).spawn().expect("starting latlab worker")
}

/// How long a run may take to reach what a test waits for.
const WAIT: Duration = Duration::from_secs(90);

async fn wait_for(pool: &sqlx::PgPool, id: i64, what: &str, ok: impl Fn(&RunView) -> bool) -> RunView {
    wait_for_run(pool, id, what, WAIT, ok).await
}

#[tokio::test]
async fn a_killed_worker_leaves_an_interrupted_run_and_the_next_run_works() {
    let base = std::env::var("DATABASE_URL").expect("DATABASE_URL: a Postgres where we may create databases");
    let name = format!("latlab_worker_test_{}", std::process::id());
    let admin = with_database(&base, "postgres");
    {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&admin).await.unwrap();
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name}")).execute(&mut c).await.unwrap();
    }
    db::ensure_database(&admin, &name).await.unwrap();
    let url = with_database(&base, &name);
    let pool = db::connect(&url, 4).await.unwrap();
    let fake = fake_openai().await;
    let create = |s: serde_json::Value| {
        let pool = pool.clone();
        async move {
            let spec: bench_types::RunSpec = serde_json::from_value(s).unwrap();
            server::store::create_runs(&pool, spec).await.unwrap().run_ids[0]
        }
    };

    // 1. A slow run (~6 s per request); kill its worker once requests are flowing.
    let slow = create(spec(&fake, "slow", 5)).await;
    let mut w1 = start_worker(&url);
    let running = wait_for(&pool, slow, "made progress", |r| {
        r.progress.as_ref().is_some_and(|p| p.phase == "measuring")
    })
    .await;
    let w1_id = running.progress.unwrap().worker;
    w1.kill().unwrap();
    w1.wait().unwrap();

    // 2. Another worker notices the expired lease: interrupted, with the reason, nothing stored.
    let mut w2 = start_worker(&url);
    let r = wait_for(&pool, slow, "became interrupted", |r| r.status != RunStatus::Running).await;
    assert_eq!(r.status, RunStatus::Interrupted);
    let err = r.error.unwrap();
    assert!(err.contains(&w1_id) && err.contains("lease expired"), "{err}");
    assert!(r.summary.is_none());
    assert!(db::requests::list(&pool, slow).await.unwrap().is_empty(), "no half result");

    // 3. The next run goes through on the surviving worker.
    let fast = create(spec(&fake, "fast", 3)).await;
    let r = wait_for(&pool, fast, "finished", |r| r.status.is_terminal()).await;
    assert_eq!(r.status, RunStatus::Succeeded, "{:?}", r.error);
    let s = r.summary.unwrap();
    assert_eq!((s.completed, s.failed, s.total_output_tokens), (3, 0, 90));
    assert_eq!(db::requests::list(&pool, fast).await.unwrap().len(), 3);
    let models = db::results::extras(&pool, fast).await.unwrap().unwrap().target_info;
    assert_eq!(models["models"]["data"][1]["id"], "fast", "target's self-description stored");

    // 4. Cancel: a queued run is cancelled at once; a running one stops at a heartbeat.
    let slow2 = create(spec(&fake, "slow", 5)).await;
    wait_for(&pool, slow2, "started", |r| r.status == RunStatus::Running).await;
    assert_eq!(server::store::cancel_run(&pool, slow2).await.unwrap(), "requested");
    let r = wait_for(&pool, slow2, "stopped", |r| r.status.is_terminal()).await;
    assert_eq!(r.status, RunStatus::Cancelled);
    assert!(db::requests::list(&pool, slow2).await.unwrap().is_empty());

    // 5. A launched engine that is not installed on this host fails clearly, and the
    //    worker carries on.
    let mut launched = spec(&fake, "fast", 1);
    launched["target"] = serde_json::json!({"kind": "launched", "engine": "vllm", "model": "Qwen/Qwen3-8B"});
    let l = create(launched).await;
    let r = wait_for(&pool, l, "finished", |r| r.status.is_terminal()).await;
    assert_eq!(r.status, RunStatus::Failed);
    assert!(
        r.error.as_deref().unwrap_or("").contains("vllm is not installed on this worker"),
        "{:?}",
        r.error
    );

    unsafe { libc::kill(w2.id() as i32, libc::SIGTERM) };
    w2.wait().unwrap();
    pool.close().await;
}

#[test]
fn database_names_are_swapped_in_urls() {
    assert_eq!(
        with_database("postgres://u@localhost/postgres?host=/tmp/x", "db1"),
        "postgres://u@localhost/db1?host=/tmp/x"
    );
    assert_eq!(
        with_database("postgres://u:p@127.0.0.1:5432/latlab", "db2"),
        "postgres://u:p@127.0.0.1:5432/db2"
    );
}
