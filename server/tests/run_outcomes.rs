//! How runs end, with a real `latlab worker`: a dead target fails the run and names the
//! errors, some failed requests are counted on the run, and a cancelled run keeps the
//! requests that finished (partial).

mod common;

use bench_types::{RunStatus, RunView};
use common::fake_openai::{fresh_database, start as fake_openai};
use common::processes::{engine_user, latlab_command, wait_for_run};
use std::time::Duration;

/// How long a run may take to reach what a test waits for.
const WAIT: Duration = Duration::from_secs(90);

async fn wait_for(pool: &sqlx::PgPool, id: i64, what: &str, ok: impl Fn(&RunView) -> bool) -> RunView {
    wait_for_run(pool, id, what, WAIT, ok).await
}

fn spec(base_url: &str, model: &str, prompts: u32) -> bench_types::RunSpec {
    serde_json::from_value(serde_json::json!({
        "target": {"kind": "external", "base_url": base_url}, "model": model,
        "dataset": {"kind": "random", "input_len": 16, "output_len": 8}, "num_prompts": prompts,
        "load": {"max_concurrency": [1]}, "sampling": {"ignore_eos": true}, "request_timeout_s": 5,
    }))
    .unwrap()
}

#[tokio::test]
async fn dead_targets_fail_partial_failures_are_counted_and_cancels_keep_what_finished() {
    let url = fresh_database(&format!("latlab_outcomes_{}", std::process::id())).await;
    let pool = db::connect(&url, 4).await.unwrap();
    let (fake, _) = fake_openai().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut worker = latlab_command("worker", &url)
        .env("LATLAB_DATA_DIR", tmp.path())
        .env("LATLAB_ENGINE_USER", engine_user())
        .spawn()
        .unwrap();
    let create = |s| {
        let pool = pool.clone();
        async move { server::store::create_runs(&pool, s).await.unwrap().run_ids[0] }
    };

    // Nothing listens on port 9: every request fails, so the run fails, with the reason.
    let dead = create(spec("http://127.0.0.1:9", "m", 5)).await;
    let r = wait_for(&pool, dead, "ended", |r| r.status.is_terminal()).await;
    assert_eq!(r.status, RunStatus::Failed);
    let e = r.error.unwrap();
    assert!(
        e.starts_with("every request failed (5 of 5); first errors: ")
            && e.to_lowercase().contains("connect"),
        "{e}"
    );
    assert_eq!(
        db::requests::list(&pool, dead).await.unwrap().len(),
        5,
        "the failed requests are kept to look at"
    );

    // Half the requests fail: a result, and the count on the run.
    let flaky = create(spec(&fake, "flaky", 4)).await;
    let r = wait_for(&pool, flaky, "ended", |r| r.status.is_terminal()).await;
    assert_eq!(r.status, RunStatus::Succeeded);
    assert_eq!(
        r.error.as_deref().map(|e| e.split(';').next().unwrap()),
        Some("2 of 4 requests failed"),
        "{:?}",
        r.error
    );
    assert_eq!(r.summary.unwrap().failed, 2);
    // The page says where its counts come from (the fake server sends prompt usage).
    let page = common::TestApp::new(pool.clone()).get(&format!("/runs/{flaky}")).await.body;
    assert!(
        page.contains("by the server&#x27;s usage.prompt_tokens")
            || page.contains("by the server's usage.prompt_tokens"),
        "{page}"
    );
    assert!(page.contains("2 of 4 requests failed"), "the failures are on the page");

    // Cancelled partway: the finished requests stay, marked partial.
    let slow = create(spec(&fake, "slow", 30)).await;
    wait_for(&pool, slow, "made progress", |r| r.progress.as_ref().is_some_and(|p| p.completed >= 2)).await;
    assert_eq!(server::store::cancel_run(&pool, slow).await.unwrap(), "requested");
    let r = wait_for(&pool, slow, "stopped", |r| r.status.is_terminal()).await;
    assert_eq!(r.status, RunStatus::Cancelled);
    assert!(r.error.as_deref().unwrap().contains("partial"), "{:?}", r.error);
    let kept = db::requests::list(&pool, slow).await.unwrap();
    assert!(kept.len() >= 2 && kept.len() < 30, "kept {}", kept.len());
    assert!(kept.iter().all(|q| q.success), "only finished requests are kept");
    let notes = db::results::extras(&pool, slow).await.unwrap().unwrap().notes;
    assert!(notes.iter().any(|n| n.starts_with("partial: cancelled after")), "{notes:?}");

    unsafe { libc::kill(worker.id() as i32, libc::SIGTERM) };
    worker.wait().unwrap();
    pool.close().await;
}
