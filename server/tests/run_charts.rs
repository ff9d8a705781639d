//! A run's distributions and request timeline through the real router: the page shows the
//! table and both charts, `chart.svg` draws one bar per request and zooms by URL, a bad
//! parameter is a 400 naming it, and a run without per-request records says so.

mod common;

use axum::http::StatusCode;
use bench_types::{BenchReport, RequestRecord, RunSpec, RunStatus, Summary};
use common::TestApp;
use sqlx::PgPool;

fn record(index: u32, start: f64, ttft: f64, e2el: f64) -> RequestRecord {
    RequestRecord {
        index,
        dispatch_offset_s: start,
        success: true,
        error: None,
        input_tokens: 8,
        output_tokens: 3,
        ttft_s: Some(ttft),
        e2el_s: Some(e2el),
        chunk_offsets_s: vec![ttft, (ttft + e2el) / 2.0, e2el],
        chunk_tokens: Some(vec![1, 1, 1]),
    }
}

/// A finished run holding `requests`, stored as a worker stores it.
async fn stored_run(pool: &PgPool, requests: Vec<RequestRecord>) -> i64 {
    let spec: RunSpec = serde_json::from_value(common::spec_json()).unwrap();
    let mut tx = pool.begin().await.unwrap();
    let id = db::runs::create(&mut tx, std::slice::from_ref(&spec)).await.unwrap()[0];
    tx.commit().await.unwrap();
    db::runs::transition(pool, id, RunStatus::Queued, RunStatus::Running, None).await.unwrap();
    let report = BenchReport {
        spec,
        target_info: Default::default(),
        started_at: chrono::Utc::now(),
        summary: Summary { completed: requests.len() as u32, duration_s: 4.0, ..Default::default() },
        requests,
        notes: vec![],
        speculative: None,
    };
    let end = db::results::RunEnd { status: RunStatus::Succeeded, note: None };
    db::results::store_report(pool, id, &report, &end).await.unwrap();
    id
}

fn bars(svg: &str) -> usize {
    svg.matches("data-request=").count()
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_timeline_has_a_bar_per_request_and_zooms_by_url(pool: PgPool) {
    let recs = vec![
        record(0, 0.0, 0.1, 1.0),
        record(1, 0.5, 0.2, 1.5),
        record(2, 2.5, 0.3, 1.0),
        record(3, 3.0, 0.1, 1.0),
    ];
    let id = stored_run(&pool, recs).await;
    let app = TestApp::new(pool);

    let svg = app.get(&format!("/runs/{id}/chart.svg")).await;
    assert_eq!(svg.status, StatusCode::OK, "{}", svg.body);
    assert_eq!(bars(&svg.body), 4, "a bar per request");
    assert!(svg.body.contains("data-from=\"0\" data-to=\"4\""), "the whole run by default");
    // 0.5..2.0 s holds the first two requests only.
    let zoomed = app.get(&format!("/runs/{id}/chart.svg?chart=timeline&from=0.5&to=2")).await;
    assert_eq!(zoomed.status, StatusCode::OK);
    assert_eq!(bars(&zoomed.body), 2);
    assert!(zoomed.body.contains("data-from=\"0.5\" data-to=\"2\""));

    let cdf = app.get(&format!("/runs/{id}/chart.svg?chart=distribution&metric=e2el&dist=cdf")).await;
    assert_eq!(cdf.status, StatusCode::OK);
    assert!(cdf.body.contains("E2EL CDF"), "{}", &cdf.body[..300.min(cdf.body.len())]);

    let page = app.get(&format!("/runs/{id}?metric=tpot&from=0.5&to=2")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("data-testid=\"dist-table\""));
    assert!(page.body.contains("TPOT distribution"));
    let drawn = page.body.split("chart-timeline").nth(1).and_then(|t| t.split("</svg>").next()).unwrap();
    assert_eq!(bars(drawn), 2, "the page draws the zoomed timeline");
    assert_eq!(bars(&page.body), 2, "the timeline travels once, not again in the hydration data");
    // E2EL 1.0, 1.0, 1.0, 1.5 s: the median 1000 ms in the table.
    let row = page.body.split("data-metric=\"e2el\"").nth(1).unwrap();
    assert!(row.split("</tr>").next().unwrap().contains(">1000.00<"), "{row:.400}");

    for (query, field) in [
        ("from=-1", "from"),
        ("to=x", "to"),
        ("metric=bogus", "metric"),
        ("chart=pie", "chart"),
        ("zoom=2", "zoom"),
        ("from=3&to=1", "to"),
    ] {
        let r = app.get(&format!("/runs/{id}/chart.svg?{query}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(r.json()["error"]["fields"][0]["field"], field, "{query}");
    }
    let page = app.get(&format!("/runs/{id}?dist=pie")).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.body.contains("Bad chart parameter: ") && page.body.contains("dist: "));
    assert_eq!(app.get("/runs/999999/chart.svg").await.status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_run_without_records_says_so(pool: PgPool) {
    let id = stored_run(&pool, vec![]).await;
    let app = TestApp::new(pool);
    let svg = app.get(&format!("/runs/{id}/chart.svg")).await;
    assert_eq!(svg.status, StatusCode::OK);
    assert!(svg.body.contains("No per-request records") && !svg.body.contains("<line"));
    let page = app.get(&format!("/runs/{id}")).await;
    assert!(page.body.contains("data-testid=\"no-records\""));
}
