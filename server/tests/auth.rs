//! Writes need the API token when one is configured; reads stay open; the browser's
//! session cookie only works from latlab's own pages. (Attacks on sessions: security.rs.)

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{TestApp, spec_json};
use sqlx::PgPool;

const TOKEN: &str = "test-token-0123456789abcdef";

fn post(uri: &str, headers: &[(&str, &str)], body: String) -> Request<Body> {
    let mut b =
        Request::post(uri).header("content-type", "application/json").header("host", "127.0.0.1:3000");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Body::from(body)).unwrap()
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn writes_need_the_token_and_reads_do_not(pool: PgPool) {
    let app = TestApp::with_token(pool, Some(TOKEN));
    let body = spec_json().to_string();
    let r = app.send(post("/api/runs", &[], body.clone())).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert!(r.json()["error"]["message"].as_str().unwrap().contains("API token"));
    let r =
        app.send(post("/api/runs", &[("authorization", "Bearer wrong-token-000000000")], body.clone())).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(app.run_count().await, 0, "nothing stored without the token");

    let r = app.send(post("/api/runs", &[("authorization", &format!("Bearer {TOKEN}"))], body)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.json()["run_ids"][0].as_i64().unwrap();
    // Reading is open: API, pages and the pages' read functions.
    assert_eq!(app.get(&format!("/api/runs/{id}")).await.status, StatusCode::OK);
    assert_eq!(app.get(&format!("/runs/{id}")).await.status, StatusCode::OK);
    assert_eq!(app.get("/").await.status, StatusCode::OK);
    let cancel = app.send(post(&format!("/api/runs/{id}/cancel"), &[], String::new())).await;
    assert_eq!(cancel.status, StatusCode::UNAUTHORIZED, "cancel is a write");
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn the_session_cookie_works_only_from_our_own_pages(pool: PgPool) {
    let app = TestApp::with_token(pool, Some(TOKEN));
    // Wrong token: no cookie.
    let bad = app
        .send(
            Request::post("/login")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from("token=nope"))
                .unwrap(),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNAUTHORIZED);
    assert!(bad.headers.get("set-cookie").is_none());
    let ok = app
        .send(
            Request::post("/login")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from(format!("token={TOKEN}")))
                .unwrap(),
        )
        .await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER);
    let set = ok.headers["set-cookie"].to_str().unwrap().to_string();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict") && !set.contains(TOKEN), "{set}");
    let cookie = set.split(';').next().unwrap().to_string();

    let body = spec_json().to_string();
    let forged = app
        .send(post("/api/runs", &[("cookie", &cookie), ("origin", "http://evil.test")], body.clone()))
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
    let forged = app
        .send(post("/api/runs", &[("cookie", &cookie), ("sec-fetch-site", "same-site")], body.clone()))
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "{}", forged.body);
    assert_eq!(app.run_count().await, 0);
    let ours =
        app.send(post("/api/runs", &[("cookie", &cookie), ("origin", "http://127.0.0.1:3000")], body)).await;
    assert_eq!(ours.status, StatusCode::CREATED, "{}", ours.body);
}

#[sqlx::test(migrator = "db::MIGRATOR")]
async fn without_a_token_loopback_writes_pass(pool: PgPool) {
    let app = TestApp::new(pool);
    assert_eq!(app.post_json("/api/runs", &spec_json()).await.status, StatusCode::CREATED);
    assert_eq!(app.get("/login").await.status, StatusCode::OK);
}
