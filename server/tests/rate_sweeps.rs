//! Latency against load through the real router: a request-rate sweep becomes one run per
//! rate in a comparison, each run's spec saying its one rate; the comparison draws latency
//! against throughput per configuration (its view in the URL) and shows goodput; a run's
//! page offers a re-run that opens the form filled in with its settings.

mod common;

use axum::http::StatusCode;
use bench_types::{BenchReport, RunSpec, RunStatus, Stats, Summary};
use common::{TestApp, spec_json};
use sqlx::PgPool;

/// Hover titles (`<title>` contents) of an SVG.
fn titles(svg: &str) -> Vec<&str> {
    svg.split("<title>").skip(1).filter_map(|t| t.split("</title>").next()).collect()
}

/// Stores a finished result for queued run `id`: `tput` output tok/s, `p99` ms of TTFT.
async fn finish(pool: &PgPool, id: i64, spec: RunSpec, tput: f64, p99: f64) {
    db::runs::transition(pool, id, RunStatus::Queued, RunStatus::Running, None).await.unwrap();
    let stats =
        Stats { mean_ms: p99 / 2.0, median_ms: p99 / 2.0, std_ms: 1.0, percentiles: vec![(99.0, p99)] };
    let summary = Summary {
        completed: 10,
        duration_s: 5.0,
        output_throughput: tput,
        request_throughput: tput / 10.0,
        goodput: Some(tput / 20.0),
        ttft: stats.clone(),
        tpot: stats.clone(),
        itl: stats.clone(),
        e2el: stats,
        ..Default::default()
    };
    let report = BenchReport {
        spec,
        target_info: Default::default(),
        started_at: chrono::Utc::now(),
        summary,
        requests: vec![],
        notes: vec![],
        speculative: None,
    };
    let end = db::results::RunEnd { status: RunStatus::Succeeded, note: None };
    db::results::store_report(pool, id, &report, &end).await.unwrap();
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_rate_sweep_is_one_run_per_rate_and_a_latency_throughput_curve(pool: PgPool) {
    let app = TestApp::new(pool.clone());
    let mut spec = spec_json();
    spec["load"] =
        serde_json::json!({"max_concurrency": [4], "request_rates": [1, 4, "inf"], "burstiness": 0.5});
    spec["goodput"] = serde_json::json!({"ttft_ms": 100});
    spec["percentiles"] = serde_json::json!([50, 99]);
    let created = app.post_json("/api/runs", &spec).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let ids: Vec<i64> =
        created.json()["run_ids"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    let slug = created.json()["comparison_slug"].as_str().unwrap().to_string();
    assert_eq!(ids.len(), 3);
    for (id, (rate, tput, p99)) in
        ids.iter().zip([(Some(1.0), 100.0, 20.0), (Some(4.0), 380.0, 45.0), (None, 350.0, 900.0)])
    {
        let stored = app.get(&format!("/api/runs/{id}")).await.json()["spec"].clone();
        assert!(stored["load"].get("request_rates").is_none(), "{stored}");
        let spec: RunSpec = serde_json::from_value(stored).unwrap();
        assert_eq!((spec.load.request_rate, spec.load.max_concurrency.clone()), (rate, vec![4]));
        finish(&pool, *id, spec, tput, p99).await;
    }

    let page = app.get(&format!("/c/{slug}?chart=curve&p=99&x=requests")).await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    let body = &page.body;
    assert!(body.contains("request throughput (req/s)") && body.contains("TTFT p99 (ms)"), "{body}");
    assert!(body.contains("viewBox=\"0 0 "));
    let hover = titles(body);
    // Joined in load order: 1/s, 4/s, then inf, whose throughput fell back.
    let order: Vec<usize> = ["rate=1/s", "rate=4/s", "rate=inf"]
        .iter()
        .map(|r| {
            hover
                .iter()
                .position(|h| h.contains(r) && h.contains("req/s, TTFT p99"))
                .unwrap_or_else(|| panic!("{r} in {hover:?}"))
        })
        .collect();
    assert!(order[0] < order[1] && order[1] < order[2], "{hover:?}");
    assert!(
        hover.iter().any(|h| h.contains("35.00 req/s, TTFT p99 900.00 ms; goodput 17.50 req/s")),
        "{hover:?}"
    );
    assert_eq!(body.matches("stroke-width=\"2\" points=").count(), 1, "one line for one configuration");
    assert!(body.contains("Goodput (req/s)") && body.contains("SLOs: TTFT &lt;= 100 ms"), "{body}");

    let svg = app.get(&format!("/c/{slug}/chart.svg?chart=curve&metric=tpot&p=50")).await;
    assert_eq!(svg.status, StatusCode::OK);
    assert!(svg.body.contains("output throughput (tok/s)"), "{}", svg.body);
    let bad = app.get(&format!("/c/{slug}/chart.svg?chart=curve&x=watts")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.json()["error"]["fields"][0]["field"], "x");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn rates_and_concurrencies_together_are_refused_naming_the_field(pool: PgPool) {
    let app = TestApp::new(pool);
    let mut spec = spec_json();
    spec["load"] = serde_json::json!({"max_concurrency": [1, 2], "request_rates": [1, 2]});
    let reply = app.post_json("/api/runs", &spec).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    let err = &reply.json()["error"];
    assert_eq!(err["fields"][0]["field"], "load.request_rates", "{err}");
    assert!(err["fields"][0]["message"].as_str().unwrap().contains("not both"), "{err}");
    assert_eq!(app.run_count().await, 0);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn re_run_opens_the_form_filled_in(pool: PgPool) {
    let app = TestApp::new(pool.clone());
    let mut spec = spec_json();
    spec["load"] = serde_json::json!({"max_concurrency": [3], "request_rate": 2.5, "burstiness": 0.25});
    spec["goodput"] = serde_json::json!({"tpot_ms": 40});
    let id = app.post_json("/api/runs", &spec).await.json()["run_ids"][0].as_i64().unwrap();
    let probe = app.get("/runs/new?from=abc").await;
    assert!(probe.body.contains("is not a run id"));
    let page = app.get(&format!("/runs/{id}")).await.body;
    assert!(page.contains(&format!("href=\"/runs/new?from={id}\"")), "{page}");

    let form = app.get(&format!("/runs/new?from={id}")).await;
    assert_eq!(form.status, StatusCode::OK);
    let value_of = |name: &str| {
        let at = form.body.find(&format!("name=\"form[{name}]\"")).unwrap_or_else(|| panic!("no {name}"));
        let tag = &form.body[form.body[..at].rfind('<').unwrap()..];
        let tag = &tag[..tag.find('>').unwrap()];
        tag.split("value=\"").nth(1).and_then(|v| v.split('"').next()).unwrap_or_default().to_string()
    };
    assert_eq!(value_of("request_rate"), "2.5");
    assert_eq!(value_of("max_concurrency"), "3");
    assert_eq!(value_of("burstiness"), "0.25");
    assert_eq!(value_of("goodput_tpot_ms"), "40");
    assert_eq!(value_of("label"), "api test");
    assert!(form.body.contains(&format!("Filled in from run #{id}")), "{}", form.body);
    assert!(form.body.contains("<option value=\"gamma\" selected"), "gamma arrivals chosen");

    let missing = app.get("/runs/new?from=999999").await;
    assert!(missing.body.contains("There is no run #999999"));

    server::seed::load(&pool).await.unwrap();
    let seed = app.get(&format!("/api/comparisons/{}", server::seed::SEED_SLUG)).await.json();
    let imported = seed["runs"][0]["id"].as_i64().unwrap();
    let page = app.get(&format!("/runs/{imported}")).await.body;
    assert!(page.contains("No re-run from the form: it was imported"), "{page}");
    assert!(!page.contains(&format!("/runs/new?from={imported}")));
}
