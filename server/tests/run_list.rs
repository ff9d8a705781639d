//! The runs list over seeded runs (`db::seed_runs`, the same generator as
//! `latlab seed-runs`): every filter, sort and page of `GET /api/runs` against the same
//! selection done here in Rust over all runs; the page `/runs` shows the same view from its
//! URL; a bad parameter is a 400 naming it.

mod common;

use axum::http::StatusCode;
use bench_types::RunView;
use common::TestApp;
use sqlx::PgPool;

const RUNS: i64 = 200;

async fn all_runs(app: &TestApp) -> Vec<RunView> {
    let r = app.get("/api/runs?archived=include&per_page=500").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    serde_json::from_str(&r.body).unwrap()
}

async fn page(app: &TestApp, q: &str) -> (Vec<i64>, i64) {
    let r = app.get(&format!("/api/runs?{q}")).await;
    assert_eq!(r.status, StatusCode::OK, "{q}: {}", r.body);
    let total = r.headers["x-total-count"].to_str().unwrap().parse().unwrap();
    let runs: Vec<RunView> = serde_json::from_str(&r.body).unwrap();
    (runs.iter().map(|r| r.id).collect(), total)
}

fn engine(r: &RunView) -> String {
    match &r.spec.target {
        bench_types::Target::Launched(l) => l.engine.as_str().to_string(),
        bench_types::Target::Imported(i) => i.engine.to_lowercase(),
        bench_types::Target::Native(_) => "native".into(),
        bench_types::Target::External { .. } => "external".into(),
    }
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn filters_sorts_and_pages_agree_with_the_runs_themselves(pool: PgPool) {
    let seeded = db::seed_runs::seed(&pool, RUNS, 2_000).await.unwrap();
    assert_eq!(seeded.run_ids.len() as i64, RUNS);
    assert_eq!(seeded.requests, 2_000);
    let app = TestApp::new(pool);
    let all = all_runs(&app).await;
    assert_eq!(all.len() as i64, RUNS + 1, "the seeded runs and the large run");

    // Default: archived runs hidden, newest first.
    let live: Vec<i64> = all.iter().filter(|r| r.archived_at.is_none()).map(|r| r.id).collect();
    assert!(live.len() < all.len(), "some seeded runs are archived");
    let (ids, total) = page(&app, "").await;
    assert_eq!(total as usize, live.len());
    assert_eq!(ids, live[..50]);

    // engine + status + tag, sorted by mean TTFT ascending, second page of 7.
    let mut want: Vec<&RunView> = all
        .iter()
        .filter(|r| r.archived_at.is_none() && engine(r) == "vllm")
        .filter(|r| r.status == bench_types::RunStatus::Succeeded && r.tags.iter().any(|t| t == "fp8"))
        .collect();
    assert!(want.len() > 7, "enough runs for two pages: {}", want.len());
    want.sort_by(|a, b| {
        let ttft = |r: &RunView| r.summary.as_ref().unwrap().ttft.mean_ms;
        ttft(a).total_cmp(&ttft(b)).then(b.id.cmp(&a.id))
    });
    let want: Vec<i64> = want.iter().map(|r| r.id).collect();
    let (ids, total) = page(&app, "engine=vllm&status=succeeded&tag=FP8&sort=ttft&per_page=7&page=2").await;
    assert_eq!(total as usize, want.len());
    assert_eq!(ids, want[7..14.min(want.len())]);

    // Throughput descending (its natural direction): runs without a result last.
    let (ids, total) = page(&app, "sort=throughput&archived=include&per_page=500").await;
    assert_eq!(total as usize, all.len());
    let tput: Vec<Option<f64>> = ids
        .iter()
        .map(|id| all.iter().find(|r| r.id == *id).unwrap().summary.as_ref().map(|s| s.output_throughput))
        .collect();
    let first_none = tput.iter().position(Option::is_none).unwrap();
    assert!(tput[first_none..].iter().all(Option::is_none), "no result sorts last");
    assert!(tput[..first_none].windows(2).all(|w| w[0] >= w[1]), "descending");

    // Model and hardware match parts, any case; archived=only; free text; tags stored lower case.
    let (ids, _) = page(&app, "model=qwen3-32&archived=include&per_page=500").await;
    let want: Vec<i64> = all.iter().filter(|r| r.spec.model == "Qwen/Qwen3-32B").map(|r| r.id).collect();
    assert_eq!(ids, want);
    let (ids, _) = page(&app, "hardware=h200&archived=include&per_page=500").await;
    assert!(!ids.is_empty());
    assert!(ids.iter().all(|id| {
        let r = all.iter().find(|r| r.id == *id).unwrap();
        matches!(&r.spec.target, bench_types::Target::Imported(i) if i.hardware.as_deref() == Some("1x NVIDIA H200"))
    }));
    let (ids, total) = page(&app, "archived=only&per_page=500").await;
    assert_eq!(ids, all.iter().filter(|r| r.archived_at.is_some()).map(|r| r.id).collect::<Vec<_>>());
    assert_eq!(total as usize, ids.len());
    let (ids, _) = page(&app, "q=warm+cache&per_page=500").await;
    let want: Vec<i64> = all
        .iter()
        .filter(|r| r.archived_at.is_none() && r.note.contains("warm cache"))
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, want);
    let (ids, _) = page(&app, &format!("q=%23{}", seeded.large_run)).await;
    assert_eq!(ids, [seeded.large_run], "#id finds the run");

    // Pages never overlap and cover every match.
    let mut seen = Vec::new();
    for p in 1..=5 {
        let (ids, _) = page(&app, &format!("sort=model&per_page=45&page={p}")).await;
        seen.extend(ids);
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len());
    assert_eq!(seen.len(), live.len());

    // The page renders the same view from its URL, sort links and pager included.
    let html = app.get("/runs?engine=vllm&status=succeeded&tag=fp8&sort=ttft&per_page=7&page=2").await;
    assert_eq!(html.status, StatusCode::OK);
    let on_page = want_ids(&app, "engine=vllm&status=succeeded&tag=fp8&sort=ttft&per_page=7&page=2").await;
    for id in &on_page {
        assert!(html.body.contains(&format!("data-run-id=\"{id}\"")), "run {id} on the page");
    }
    assert_eq!(html.body.matches("data-run-id=").count(), on_page.len());
    assert!(html.body.contains("aria-sort=\"ascending\""), "the sorted column says so");
    assert!(html.body.contains("sort=ttft&amp;dir=desc"), "a second click flips the direction");
    assert!(html.body.contains("page=1") || html.body.contains("rel=\"first\""), "a link back to page 1");
}

async fn want_ids(app: &TestApp, q: &str) -> Vec<i64> {
    page(app, q).await.0
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn bad_list_parameters_are_refused_naming_them(pool: PgPool) {
    let app = TestApp::new(pool);
    let r = app.get("/api/runs?sort=colour").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let j = r.json();
    assert_eq!(j["error"]["fields"][0]["field"], "sort");
    assert!(j["error"]["message"].as_str().unwrap().contains("ttft"), "{j}");
    for q in ["status=done", "page=0", "per_page=501", "dir=up", "archived=maybe", "colour=red", "limit=0"] {
        let r = app.get(&format!("/api/runs?{q}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{q}: {}", r.body);
    }
    let page = app.get("/runs?sort=colour").await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.body.contains("cannot sort by"), "{}", page.body);
}
