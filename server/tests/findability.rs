//! What a newcomer needs to find and trust: the comparisons index and nav, backlinks from
//! runs, "compare selected" on the runs list, page titles, imported numbers that were never
//! measured shown as missing (or derived, and marked), and cacheable static files.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{TestApp, spec_json};
use sqlx::PgPool;

async fn sweep(app: &TestApp, label: &str) -> (Vec<i64>, String) {
    let mut s = spec_json();
    s["label"] = label.into();
    s["load"]["max_concurrency"] = serde_json::json!([1, 4]);
    let r = app.post_json("/api/runs", &s).await.json();
    let ids = r["run_ids"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    (ids, r["comparison_slug"].as_str().unwrap().to_string())
}

fn title_of(html: &str) -> &str {
    html.split("<title>").nth(1).and_then(|t| t.split("</title>").next()).unwrap_or("")
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn comparisons_are_listed_linked_from_runs_and_titled(pool: PgPool) {
    let app = TestApp::new(pool);
    let (ids, slug) = sweep(&app, "BS sweep one").await;
    let home = app.get("/").await.body;
    assert!(home.contains("href=\"/comparisons\""), "the nav links the index");
    assert!(home.contains(&format!("href=\"/c/{slug}\"")), "the home page links recent comparisons");
    let index = app.get("/comparisons").await;
    assert_eq!(index.status, StatusCode::OK);
    assert!(
        index.body.contains("BS sweep one") && index.body.contains(&format!("href=\"/c/{slug}\"")),
        "{}",
        index.body
    );
    assert!(index.body.contains("external http://127.0.0.1:8000"), "engines listed");
    assert_eq!(title_of(&index.body), "Comparisons · latlab");
    let run = app.get(&format!("/runs/{}", ids[1])).await.body;
    assert!(run.contains(&format!("href=\"/c/{slug}\"")), "the run links back to its comparison");
    assert_eq!(title_of(&run), format!("Run #{}: BS sweep one · latlab", ids[1]));
    let c = app.get(&format!("/c/{slug}")).await.body;
    assert_eq!(title_of(&c), "BS sweep one · latlab");
    assert!(c.contains("data-testid=\"live-note\""), "queued runs: the page says it updates");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn picked_runs_become_a_comparison_and_too_few_say_why(pool: PgPool) {
    let app = TestApp::new(pool);
    let (a, _) = sweep(&app, "a").await;
    let (b, _) = sweep(&app, "b").await;
    let runs = app.get("/runs").await.body;
    assert!(
        runs.contains("id=\"compare-form\"") && runs.contains("form=\"compare-form\""),
        "checkboxes belong to the form"
    );
    let post = |body: String| {
        Request::post("/compare")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(body))
            .unwrap()
    };
    let r = app.send(post(format!("run={}&run={}&title=Picked", b[0], a[1]))).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    let to = r.headers["location"].to_str().unwrap().to_string();
    let slug = to.strip_prefix("/c/").unwrap_or_else(|| panic!("went to {to}"));
    let c = app.get(&format!("/api/comparisons/{slug}")).await.json();
    assert_eq!(c["title"], "Picked");
    let order: Vec<i64> = c["runs"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
    assert_eq!(order, vec![b[0], a[1]]);
    let one = app.send(post(format!("run={}&title=x", a[0]))).await;
    let back = one.headers["location"].to_str().unwrap().to_string();
    assert!(back.starts_with("/runs?compare_error="), "{back}");
    let page = app.get(&back).await.body;
    assert!(page.contains("Pick at least two runs to compare."), "{page}");
    let bad = app.send(post(format!("run={}&run=999999", a[0]))).await;
    let page = app.get(bad.headers["location"].to_str().unwrap()).await.body;
    assert!(page.contains("there is no run 999999"), "{page}");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn an_imported_block_shows_what_it_lacks_as_missing_and_derives_latency_marked(pool: PgPool) {
    let app = TestApp::new(pool);
    let block = include_str!("../../data/fixtures/vllm_serving_result.txt");
    let body = serde_json::json!({"format": "text", "content": block, "config": {"engine": "vLLM", "model": "Qwen/Qwen3-8B", "source": "study.txt"}, "comparison_title": "imported"});
    let r = app.post_json("/api/imports", &body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["run_ids"][0].as_i64().unwrap();
    let page = app.get(&format!("/runs/{id}")).await.body;
    assert!(page.contains("Mean E2EL (ms):                          n/a"), "{page}");
    assert!(!page.contains("Mean E2EL (ms):                          0.00"));
    assert!(
        page.contains("imported from study.txt; the benchmark ran 44.4 s") && !page.contains("ran 0.0 s"),
        "{page}"
    );
    // 44.40 s x 4 concurrent / 100 requests.
    assert!(
        page.contains("data-testid=\"derived-latency\"")
            && page.contains("1.78 s")
            && page.contains(">derived<"),
        "{page}"
    );
    // The JSON export says null where the source had no number, never 0.
    let slug = r.json()["comparison_slug"].as_str().unwrap().to_string();
    let export = app.get(&format!("/api/comparisons/{slug}/export.json")).await.json();
    let summary = &export["runs"][0]["summary"];
    assert!(summary["e2el"].is_null(), "{summary}");
    assert!(summary["ttft"]["std_ms"].is_null(), "{summary}");
    assert_eq!(summary["ttft"]["mean_ms"], 64.0);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn static_files_may_be_cached_but_are_revalidated(pool: PgPool) {
    let site = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/site");
    assert!(
        std::path::Path::new(site).join("pkg/latlab.css").exists(),
        "build the site first (scripts/build.sh)"
    );
    let state = server::AppState::new(pool.clone(), site, "127.0.0.1:0".parse().unwrap());
    let app = server::router(state);
    use tower::ServiceExt;
    let r = app.clone().oneshot(Request::get("/pkg/latlab.css").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["cache-control"], "public, no-cache");
    let page = app.oneshot(Request::get("/runs").body(Body::empty()).unwrap()).await.unwrap();
    assert!(
        page.headers().get("cache-control").is_none_or(|v| v != "public, no-cache"),
        "pages are not static"
    );
}
