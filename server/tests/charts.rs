//! The seed study's charts through the real router: bad view parameters are a 400 naming
//! the parameter (on `chart.svg`, and on the page, which names it where the chart goes),
//! the SVG scales (a viewBox), the ladder's text is ASCII English, an empty CDF says why,
//! and hover titles carry no server paths.

mod common;

use axum::http::StatusCode;
use common::TestApp;
use server::seed::{SEED_SLUG, load};
use sqlx::PgPool;

/// Hover titles (`<title>` contents) of an SVG.
fn titles(svg: &str) -> Vec<&str> {
    svg.split("<title>").skip(1).filter_map(|t| t.split("</title>").next()).collect()
}

/// Every `<text>` element's content.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text ")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split("</text>").next()?.trim().to_string()))
        .collect()
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn bad_chart_parameters_are_a_400_naming_the_parameter(pool: PgPool) {
    load(&pool).await.unwrap();
    let app = TestApp::new(pool);
    for (query, field, says) in [
        ("metric=bogus", "metric", "unknown metric \"bogus\""),
        ("chart=pie", "chart", "unknown chart \"pie\""),
        ("p=42", "p", "no run of this comparison has p42"),
        ("p=fast", "p", "\"fast\" is not a statistic"),
        ("baseline=x", "baseline", "not a run id"),
        ("baseline=999999", "baseline", "run 999999 is not in this comparison"),
        ("log=maybe", "log", "not on or off"),
    ] {
        let svg = app.get(&format!("/c/{SEED_SLUG}/chart.svg?{query}")).await;
        assert_eq!(svg.status, StatusCode::BAD_REQUEST, "{query}: {}", svg.body);
        let err = &svg.json()["error"];
        assert_eq!(err["fields"][0]["field"], field, "{query}: {err}");
        let msg = err["message"].as_str().unwrap();
        assert!(msg.contains(&format!("{field}: ")) && msg.contains(says), "{query}: {err}");

        let page = app.get(&format!("/c/{SEED_SLUG}?{query}")).await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{query}");
        assert!(page.body.contains("Bad chart parameter: "), "{query}");
        assert!(
            page.body.contains(&format!("{field}: ")) && page.body.contains(&says.replace('"', "&quot;")),
            "{query}: not named on the page"
        );
        assert!(!page.body.contains("<svg"), "{query}: no chart for a view that means nothing");
    }
    // What the plain form submits ("none" is empty) and a percentile the runs carry are fine.
    for query in ["chart=bars&metric=ttft&p=mean&baseline=&other=", "metric=tpot&p=99", "chart=sweep&log=1"] {
        assert_eq!(
            app.get(&format!("/c/{SEED_SLUG}/chart.svg?{query}")).await.status,
            StatusCode::OK,
            "{query}"
        );
        assert_eq!(app.get(&format!("/c/{SEED_SLUG}?{query}")).await.status, StatusCode::OK, "{query}");
    }
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_ladder_reads_in_english_without_paths_and_scales(pool: PgPool) {
    load(&pool).await.unwrap();
    let app = TestApp::new(pool);
    let svg = app.get(&format!("/c/{SEED_SLUG}/chart.svg?chart=ladder&metric=ttft")).await;
    assert_eq!(svg.status, StatusCode::OK);
    let root = &svg.body[..svg.body.find('>').unwrap()];
    assert!(root.contains("viewBox=\"0 0 "), "{root}");
    let t = texts(&svg.body);
    assert!(t.iter().all(|t| t.is_ascii()), "{t:?}");
    assert!(t.iter().any(|t| t.starts_with("Quantization: #")), "{t:?}");
    // A latency that fell reads as a drop: "(-x% TTFT, n.nnx faster ...)".
    assert!(t.iter().filter(|t| t.contains(" faster")).all(|t| t.contains("(-")), "{t:?}");
    let hover = titles(&svg.body);
    assert!(hover.iter().any(|h| h.contains("量子化")), "the original name on hover: {hover:?}");
    assert!(hover.iter().all(|h| !h.contains("shared/")), "{hover:?}");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn an_empty_cdf_says_there_is_no_per_request_data(pool: PgPool) {
    load(&pool).await.unwrap();
    let app = TestApp::new(pool);
    let svg = app.get(&format!("/c/{SEED_SLUG}/chart.svg?chart=cdf")).await;
    assert_eq!(svg.status, StatusCode::OK);
    assert!(svg.body.contains("No per-request data"), "{}", svg.body);
    assert!(!svg.body.contains("<polyline") && !svg.body.contains("<line"), "bare axes: {}", svg.body);
}
