//! Tags and notes, archive and delete, through the JSON API and the pages' plain forms:
//! input checked with errors naming the field, writes guarded like every write, archived
//! runs hidden from the list until asked for, and deletes that never take a run from a
//! comparison or from a worker.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{TestApp, spec_json};
use sqlx::PgPool;

async fn new_run(app: &TestApp, label: &str) -> i64 {
    let mut s = spec_json();
    s["label"] = label.into();
    let r = app.post_json("/api/runs", &s).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.json()["run_ids"][0].as_i64().unwrap()
}

/// Makes a queued run look finished (no worker runs in these tests).
async fn finish(pool: &PgPool, id: i64) {
    sqlx::query("UPDATE runs SET status = 'cancelled', finished_at = now() WHERE id = $1")
        .bind(id)
        .execute(pool)
        .await
        .unwrap();
}

fn form(uri: &str, body: &str) -> Request<Body> {
    Request::post(uri)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn location(r: &common::Reply) -> String {
    r.headers["location"].to_str().unwrap().to_string()
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn tags_and_notes_are_checked_stored_and_filtered_on(pool: PgPool) {
    let app = TestApp::new(pool);
    let a = new_run(&app, "tagged").await;
    let b = new_run(&app, "other").await;
    let r = app
        .post_json(
            &format!("/api/runs/{a}/annotations"),
            &serde_json::json!({"tags": [" FP8", "h100", "fp8"], "note": " warm cache\r\n"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.json(), serde_json::json!({"tags": ["fp8", "h100"], "note": "warm cache"}));
    let run = app.get(&format!("/api/runs/{a}")).await.json();
    assert_eq!(run["tags"], serde_json::json!(["fp8", "h100"]));
    assert_eq!(run["note"], "warm cache");

    let bad = app
        .post_json(
            &format!("/api/runs/{b}/annotations"),
            &serde_json::json!({"tags": ["ok", "no spaces"], "note": "n".repeat(4001)}),
        )
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let fields: Vec<String> = bad.json()["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(fields, ["tags[1]", "note"]);
    let unknown =
        app.post_json(&format!("/api/runs/{b}/annotations"), &serde_json::json!({"labels": []})).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "unknown fields are refused");
    assert_eq!(
        app.post_json("/api/runs/999999/annotations", &serde_json::json!({})).await.status,
        StatusCode::NOT_FOUND
    );

    let listed: Vec<i64> = app
        .get("/api/runs?tag=fp8")
        .await
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(listed, [a]);

    // The run page's form: a redirect back, and a refusal shown on the page.
    let r =
        app.send(form(&format!("/runs/{b}/annotations"), "tags=baseline%2C+SGLang&note=second+try")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(location(&r), format!("/runs/{b}"));
    let page = app.get(&format!("/runs/{b}")).await.body;
    assert!(
        page.contains("data-tag=\"baseline\"")
            && page.contains("data-tag=\"sglang\"")
            && page.contains("second try"),
        "{page}"
    );
    let r = app.send(form(&format!("/runs/{b}/annotations"), "tags=a%3Cb&note=")).await;
    let to = location(&r);
    assert!(to.starts_with(&format!("/runs/{b}?annotations_error=")), "{to}");
    let page = app.get(&to).await.body;
    assert!(page.contains("tags[0]") && page.contains("no spaces"), "the error is shown");

    // Comparisons too.
    let mut s = spec_json();
    s["load"]["max_concurrency"] = serde_json::json!([1, 2]);
    let slug = app.post_json("/api/runs", &s).await.json()["comparison_slug"].as_str().unwrap().to_string();
    let r = app
        .post_json(
            &format!("/api/comparisons/{slug}/annotations"),
            &serde_json::json!({"tags": ["study"], "note": "for the blog"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let c = app.get(&format!("/api/comparisons/{slug}")).await.json();
    assert_eq!((c["tags"][0].as_str(), c["note"].as_str()), (Some("study"), Some("for the blog")));
    let r = app.send(form(&format!("/c/{slug}/annotations"), "tags=study2&note=")).await;
    assert_eq!(location(&r), format!("/c/{slug}"));
    assert!(app.get(&format!("/c/{slug}")).await.body.contains("data-tag=\"study2\""));
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn writes_need_the_token_and_the_same_origin(pool: PgPool) {
    const TOKEN: &str = "a-token-of-twenty-chars";
    let app = TestApp::with_token(pool, Some(TOKEN));
    let id: i64 =
        sqlx::query_scalar("INSERT INTO runs (spec, target_description) VALUES ($1, 'x') RETURNING id")
            .bind(spec_json())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    for (method, uri) in [
        ("POST", format!("/api/runs/{id}/annotations")),
        ("POST", format!("/api/runs/{id}/archive")),
        ("DELETE", format!("/api/runs/{id}")),
        ("POST", format!("/runs/{id}/annotations")),
        ("POST", format!("/runs/{id}/delete")),
        ("DELETE", "/api/comparisons/any".to_string()),
        ("POST", "/c/any/delete".to_string()),
    ] {
        let r = app
            .send(
                Request::builder()
                    .method(method)
                    .uri(&uri)
                    .header("content-type", "application/json")
                    .body(Body::from("{}"))
                    .unwrap(),
            )
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{method} {uri}: {}", r.body);
        let r = app
            .send(
                Request::builder()
                    .method(method)
                    .uri(&uri)
                    .header("authorization", format!("Bearer {TOKEN}"))
                    .header("sec-fetch-site", "cross-site")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{method} {uri} from another site");
    }
    let r = app
        .send(
            Request::post(format!("/api/runs/{id}/archive"))
                .header("authorization", format!("Bearer {TOKEN}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn archived_runs_leave_the_list_until_asked_for(pool: PgPool) {
    let app = TestApp::new(pool);
    let a = new_run(&app, "keep").await;
    let b = new_run(&app, "tidy away").await;
    assert_eq!(
        app.post_json(&format!("/api/runs/{b}/archive"), &serde_json::json!({})).await.status,
        StatusCode::NO_CONTENT
    );
    let ids = |v: serde_json::Value| {
        v.as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(ids(app.get("/api/runs").await.json()), [a]);
    assert_eq!(ids(app.get("/api/runs?archived=include").await.json()), [b, a]);
    assert_eq!(ids(app.get("/api/runs?archived=only").await.json()), [b]);
    assert!(
        app.get(&format!("/api/runs/{b}")).await.json()["archived_at"].is_string(),
        "still readable by id"
    );
    assert!(app.get(&format!("/runs/{b}")).await.body.contains("Un-archive"));
    // The page's form un-archives.
    let r = app.send(form(&format!("/runs/{b}/archive"), "archived=false")).await;
    assert_eq!(location(&r), format!("/runs/{b}"));
    assert_eq!(ids(app.get("/api/runs").await.json()), [b, a]);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn deleting_asks_first_and_never_takes_a_run_from_a_comparison_or_a_worker(pool: PgPool) {
    let app = TestApp::new(pool.clone());
    let lone = new_run(&app, "lone").await;
    // Queued: refused until cancelled and stopped.
    let r = app.send(Request::delete(format!("/api/runs/{lone}")).body(Body::empty()).unwrap()).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert!(r.body.contains("cancel it first"), "{}", r.body);
    assert!(app.get(&format!("/runs/{lone}/delete")).await.body.contains("data-testid=\"delete-refused\""));

    // In a comparison: refused, naming it; the comparison keeps its run.
    let mut s = spec_json();
    s["label"] = "swept".into();
    s["load"]["max_concurrency"] = serde_json::json!([1, 2]);
    let created = app.post_json("/api/runs", &s).await.json();
    let slug = created["comparison_slug"].as_str().unwrap().to_string();
    let member = created["run_ids"][0].as_i64().unwrap();
    finish(&pool, member).await;
    let r = app.send(Request::delete(format!("/api/runs/{member}")).body(Body::empty()).unwrap()).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert!(r.body.contains(&format!("/c/{slug}")) && r.body.contains("Archive it instead"), "{}", r.body);
    let confirm = app.get(&format!("/runs/{member}/delete")).await.body;
    assert!(
        confirm.contains("delete-archive-instead") && !confirm.contains("id=\"delete-confirm\""),
        "{confirm}"
    );
    let r = app.send(form(&format!("/runs/{member}/delete"), "")).await;
    let to = location(&r);
    assert!(to.starts_with(&format!("/runs/{member}/delete?error=")), "{to}");
    assert!(app.get(&to).await.body.contains("cannot be deleted"));
    assert_eq!(
        app.get(&format!("/api/comparisons/{slug}")).await.json()["runs"].as_array().unwrap().len(),
        2
    );

    // Finished and in no comparison: the confirmation page asks; its form deletes.
    finish(&pool, lone).await;
    let confirm = app.get(&format!("/runs/{lone}/delete")).await;
    assert_eq!(confirm.status, StatusCode::OK);
    assert!(confirm.body.contains("id=\"delete-confirm\"") && confirm.body.contains("cannot be undone"));
    assert!(confirm.body.contains(&format!("href=\"/runs/{lone}\"")), "Cancel goes back to the run");
    let r = app.send(form(&format!("/runs/{lone}/delete"), "")).await;
    assert_eq!(location(&r), format!("/runs?deleted={lone}"));
    assert_eq!(app.get(&format!("/api/runs/{lone}")).await.status, StatusCode::NOT_FOUND);
    assert!(
        app.get(&format!("/runs?deleted={lone}")).await.body.contains(&format!("Run #{lone} was deleted"))
    );
    let r = app.send(Request::delete(format!("/api/runs/{lone}")).body(Body::empty()).unwrap()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn deleting_a_comparison_asks_first_keeps_its_runs_and_frees_them(pool: PgPool) {
    let app = TestApp::new(pool.clone());
    let mut s = spec_json();
    s["label"] = "swept".into();
    s["load"]["max_concurrency"] = serde_json::json!([1, 2]);
    let created = app.post_json("/api/runs", &s).await.json();
    let slug = created["comparison_slug"].as_str().unwrap().to_string();
    let runs: Vec<i64> = created["run_ids"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    for &id in &runs {
        finish(&pool, id).await;
    }
    // A second comparison of the first run keeps that run after the first goes.
    let other = app
        .post_json("/api/comparisons", &serde_json::json!({"title": "kept", "run_ids": [runs[0]]}))
        .await
        .json()["slug"]
        .as_str()
        .unwrap()
        .to_string();
    let refused =
        app.send(Request::delete(format!("/api/runs/{}", runs[1])).body(Body::empty()).unwrap()).await;
    assert!(refused.body.contains("delete those comparisons first"), "{}", refused.body);

    // The comparison page links to the question; the question names the permalink and
    // what stays, and Cancel goes back.
    assert!(app.get(&format!("/c/{slug}")).await.body.contains(&format!("href=\"/c/{slug}/delete\"")));
    let confirm = app.get(&format!("/c/{slug}/delete")).await;
    assert_eq!(confirm.status, StatusCode::OK);
    assert!(
        confirm.body.contains("id=\"delete-confirm\"")
            && confirm.body.contains(&format!("/c/{slug} stops working"))
            && confirm.body.contains("Its 2 runs stay")
            && confirm.body.contains(&format!("href=\"/c/{slug}\"")),
        "{}",
        confirm.body
    );
    assert_eq!(app.get("/c/no-such-slug/delete").await.status, StatusCode::NOT_FOUND);

    // The form deletes and says so on the list; the runs stay.
    let r = app.send(form(&format!("/c/{slug}/delete"), "")).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(location(&r), format!("/comparisons?deleted={slug}"));
    assert_eq!(app.get(&format!("/api/comparisons/{slug}")).await.status, StatusCode::NOT_FOUND);
    assert!(app.get(&location(&r)).await.body.contains(&format!("The comparison /c/{slug} was deleted")));
    for &id in &runs {
        assert_eq!(app.get(&format!("/api/runs/{id}")).await.status, StatusCode::OK, "run {id} stays");
    }
    // A run only it listed may now be deleted; one another comparison lists may not.
    let r = app.send(Request::delete(format!("/api/runs/{}", runs[1])).body(Body::empty()).unwrap()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let r = app.send(Request::delete(format!("/api/runs/{}", runs[0])).body(Body::empty()).unwrap()).await;
    assert!(r.status == StatusCode::CONFLICT && r.body.contains(&format!("/c/{other}")), "{}", r.body);

    // The API: 204, then 404; a second form post goes back to the question with the reason;
    // a slug that could not be one goes to the list.
    let r = app.send(Request::delete(format!("/api/comparisons/{other}")).body(Body::empty()).unwrap()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = app.send(Request::delete(format!("/api/comparisons/{other}")).body(Body::empty()).unwrap()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = app.send(form(&format!("/c/{other}/delete"), "")).await;
    assert!(location(&r).starts_with(&format!("/c/{other}/delete?error=")), "{}", location(&r));
    let r = app.send(form("/c/a%0Ab/delete", "")).await;
    assert_eq!(location(&r), "/comparisons");
}
