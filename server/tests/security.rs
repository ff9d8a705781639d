//! Attacks on the web server, each through a real listening latlab: refused with an error
//! that names the problem, and nothing stored. (What a worker refuses to run, read or send
//! is in `worker_security.rs`; a real browser on another origin in end2end/.)

mod common;

use common::{serve, spec_json, state};
use reqwest::StatusCode;
use serde_json::json;
use sqlx::PgPool;

const TOKEN: &str = "security-test-token-0123456789";

fn client() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

async fn runs(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM runs").fetch_one(pool).await.unwrap()
}

async fn post(base: &str, path: &str, body: &serde_json::Value) -> (StatusCode, serde_json::Value) {
    let r = client().post(format!("{base}{path}")).json(body).send().await.unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")))
}

fn message(v: &serde_json::Value) -> String {
    v["error"].to_string()
}

/// Attack 1: a launched target used to name any program and pass any flag.
#[sqlx::test(migrator = "db::MIGRATOR")]
async fn a_request_cannot_choose_the_program_or_flags_that_reach_code(pool: PgPool) {
    let base = serve(state(pool.clone(), None)).await;
    let launched = |target: serde_json::Value| {
        let mut s = spec_json();
        s["target"] = target;
        s
    };
    let (status, v) = post(
        &base,
        "/api/runs",
        &launched(json!({"kind": "launched", "engine": "trt_llm", "executable": "/usr/bin/python3", "model": "/tmp/x.py"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert!(message(&v).contains("executable"), "{v}");
    for extra in [
        &["--trust-remote-code"][..],
        &["--chat-template", "/etc/shadow"],
        &["--allowed-local-media-path", "/"],
    ] {
        let (status, v) = post(
            &base,
            "/api/runs",
            &launched(
                json!({"kind": "launched", "engine": "vllm", "model": "Qwen/Qwen3-8B", "extra_args": extra}),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{extra:?}: {v}");
        assert_eq!(v["error"]["fields"][0]["field"], "target.extra_args", "{v}");
        assert!(message(&v).contains("may only tune performance"), "{v}");
    }
    let (status, v) = post(
        &base,
        "/api/runs",
        &launched(json!({"kind": "launched", "engine": "vllm", "model": "../../tmp/x"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(runs(&pool).await, 0, "nothing stored");
}

/// Attack 2: any environment variable could be sent to any URL, and the error told which
/// variables exist.
#[sqlx::test(migrator = "db::MIGRATOR")]
async fn api_keys_are_only_variables_the_operator_opted_in(pool: PgPool) {
    let base = serve(state(pool.clone(), None)).await;
    let mut answers = Vec::new();
    // PATH exists on every host, the other does not: the answers must not differ.
    for name in ["LATLAB_API_TOKEN", "DATABASE_URL", "PATH", "NO_SUCH_VARIABLE_HERE"] {
        let mut s = spec_json();
        s["target"] = json!({"kind": "external", "base_url": "http://evil.example", "api_key_env": name});
        let (status, v) = post(&base, "/api/runs", &s).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {v}");
        assert_eq!(v["error"]["fields"][0]["field"], "target.api_key_env");
        answers.push(v["error"]["fields"][0]["message"].as_str().unwrap().to_string());
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "answers reveal which variables exist: {answers:?}");
    assert!(answers[0].contains("LATLAB_KEY_"), "{}", answers[0]);
    assert_eq!(runs(&pool).await, 0);
}

/// Attack 3: with no token every write was accepted from any page, and any Host.
#[sqlx::test(migrator = "db::MIGRATOR")]
async fn writes_from_other_sites_and_rebound_hosts_are_refused(pool: PgPool) {
    let base = serve(state(pool.clone(), None)).await;
    let host = base.trim_start_matches("http://").to_string();
    let c = client();
    let send = |origin: Option<&str>, site: Option<&str>, host_header: Option<&str>, path: &str| {
        let mut r = c.post(format!("{base}{path}")).json(&spec_json());
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        if let Some(s) = site {
            r = r.header("sec-fetch-site", s);
        }
        if let Some(h) = host_header {
            r = r.header("host", h);
        }
        r.send()
    };
    let r = send(Some("http://evil.example"), None, None, "/api/runs").await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("Origin: http://evil.example"));
    let r = send(None, Some("cross-site"), None, "/api/runs").await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // The pages' own server function, as a form on another site would post it.
    let form = c
        .post(format!("{base}/sfn/create_runs"))
        .header("origin", "http://evil.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("form[label]=x")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), StatusCode::FORBIDDEN);
    // DNS rebinding: the attacker's name, pointing at us.
    let r = send(Some("http://rebind.attacker.example"), None, Some("rebind.attacker.example"), "/api/runs")
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::MISDIRECTED_REQUEST);
    assert!(r.text().await.unwrap().contains("LATLAB_ALLOWED_HOSTS"));
    let read = c
        .get(format!("{base}/api/runs"))
        .header("host", "rebind.attacker.example:3000")
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::MISDIRECTED_REQUEST, "rebinding must not read either");
    assert_eq!(runs(&pool).await, 0, "nothing stored");
    // Our own pages and programs still write.
    let ours = send(Some(&format!("http://{host}")), Some("same-origin"), None, "/api/runs").await.unwrap();
    assert_eq!(ours.status(), StatusCode::CREATED);
    let program = send(None, None, None, "/api/runs").await.unwrap();
    assert_eq!(program.status(), StatusCode::CREATED);
    assert_eq!(runs(&pool).await, 2);
}

fn cookie_of(r: &reqwest::Response) -> Option<(String, String)> {
    let set = r.headers().get("set-cookie")?.to_str().ok()?.to_string();
    Some((set.split(';').next()?.to_string(), set))
}

async fn login(base: &str, token: &str, extra: &[(&str, &str)]) -> reqwest::Response {
    let mut r = client().post(format!("{base}/login")).form(&[("token", token)]);
    for (k, v) in extra {
        r = r.header(*k, *v);
    }
    r.send().await.unwrap()
}

/// Attack 6: the cookie was the bare SHA-256 of the token, forever valid, and guesses were
/// unlimited.
#[sqlx::test(migrator = "db::MIGRATOR")]
async fn sessions_are_random_revocable_bound_to_the_token_and_guessing_is_limited(pool: PgPool) {
    use sha2::Digest;
    let base = serve(state(pool.clone(), Some(TOKEN))).await;
    let write = |cookie: String| {
        let base = base.clone();
        async move {
            client()
                .post(format!("{base}/api/runs"))
                .header("cookie", cookie)
                .json(&spec_json())
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    let a = login(&base, TOKEN, &[]).await;
    assert_eq!(a.status(), StatusCode::SEE_OTHER);
    let (cookie_a, set_a) = cookie_of(&a).unwrap();
    let (cookie_b, _) = cookie_of(&login(&base, TOKEN, &[("x-forwarded-proto", "https")]).await).unwrap();
    assert_ne!(cookie_a, cookie_b, "each sign-in gets its own random id");
    let old_style: String = sha2::Sha256::digest(format!("latlab-session:{TOKEN}").as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(!cookie_a.contains(&old_style));
    assert!(
        set_a.contains("HttpOnly")
            && set_a.contains("SameSite=Strict")
            && set_a.contains("Max-Age=604800")
            && !set_a.contains("Secure"),
        "{set_a}"
    );
    let (_, set_https) = cookie_of(&login(&base, TOKEN, &[("x-forwarded-proto", "https")]).await).unwrap();
    assert!(set_https.contains("; Secure"), "{set_https}");

    assert_eq!(write(cookie_a.clone()).await, StatusCode::CREATED);
    assert_eq!(
        write(format!("latlab_session={old_style}")).await,
        StatusCode::UNAUTHORIZED,
        "the old derived cookie is dead"
    );
    // Sign-out revokes that session only.
    let out =
        client().post(format!("{base}/logout")).header("cookie", cookie_a.clone()).send().await.unwrap();
    assert_eq!(out.status(), StatusCode::SEE_OTHER);
    assert_eq!(write(cookie_a.clone()).await, StatusCode::UNAUTHORIZED);
    assert_eq!(write(cookie_b.clone()).await, StatusCode::CREATED);
    // A new token ends the sessions of the old one.
    let rotated = serve(state(pool.clone(), Some("another-token-0123456789abcdef"))).await;
    let r = client()
        .post(format!("{rotated}/api/runs"))
        .header("cookie", cookie_b.clone())
        .json(&spec_json())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // Guessing: ten failures from an address, then even the right token waits.
    for i in 0..10 {
        let r = login(&base, &format!("guess-{i}"), &[]).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "guess {i}");
        assert!(r.headers().get("set-cookie").is_none());
    }
    let blocked = login(&base, TOKEN, &[]).await;
    assert_eq!(blocked.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(blocked.headers().get("retry-after").is_some());
    assert!(cookie_of(&blocked).is_none());
    let sessions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sessions").fetch_one(&pool).await.unwrap();
    assert_eq!(sessions, 3, "only the three sign-ins that succeeded");
    let ids: Vec<Vec<u8>> =
        sqlx::query_scalar("SELECT id_hash FROM sessions").fetch_all(&pool).await.unwrap();
    let raw = cookie_b.split('=').nth(1).unwrap();
    assert!(ids.iter().all(|h| h.as_slice() != raw.as_bytes()), "ids are stored hashed");
}

/// Attack 7: NUL and bidirectional controls reached Postgres (500 with its raw error) or
/// were shown as labels.
#[sqlx::test(migrator = "db::MIGRATOR")]
async fn text_with_nul_or_bidi_controls_is_refused_by_field(pool: PgPool) {
    let base = serve(state(pool.clone(), None)).await;
    let mut with_nul = spec_json();
    with_nul["sampling"] = json!({"extra_body": {"chat_template_kwargs": {"x": "a\u{0}b"}}});
    let mut rlo = spec_json();
    rlo["label"] = json!("fast \u{202E}4pu");
    let import = json!({"format": "text", "content": "Successful requests: 1\u{0}", "config": {"engine": "vLLM", "model": "m"}});
    let cases = [
        ("/api/runs", with_nul, "sampling.extra_body.chat_template_kwargs.x"),
        ("/api/runs", rlo, "label"),
        ("/api/imports", import, "content"),
        ("/api/comparisons", json!({"title": "t\u{0}", "run_ids": [1]}), "title"),
        (
            "/api/comparisons",
            json!({"title": "t", "run_ids": [1], "view": {"metric": "\u{2066}x"}}),
            "view.metric",
        ),
    ];
    for (path, body, field) in cases {
        let (status, v) = post(&base, path, &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {v}");
        assert_eq!(v["error"]["fields"][0]["field"], field, "{path}: {v}");
        let text = v.to_string();
        assert!(
            !text.contains("invalid byte sequence") && !text.contains("unsupported Unicode escape"),
            "a database error leaked: {text}"
        );
    }
    assert_eq!(runs(&pool).await, 0);
    let comparisons: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM comparisons").fetch_one(&pool).await.unwrap();
    assert_eq!(comparisons, 0);
}

/// Attack 7: an "imported" target stayed queued forever; query errors were plain text; a
/// database failure showed its raw message.
#[sqlx::test(migrator = "db::MIGRATOR")]
async fn small_holes_answer_with_named_json_errors(pool: PgPool) {
    let base = serve(state(pool.clone(), None)).await;
    let mut imported = spec_json();
    imported["target"] = json!({"kind": "imported", "engine": "vLLM", "source": "x"});
    let (status, v) = post(&base, "/api/runs", &imported).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"]["fields"][0]["field"], "target.kind");
    assert_eq!(runs(&pool).await, 0);
    for q in ["limit=abc", "bogus=1"] {
        let r = client().get(format!("{base}/api/runs?{q}")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{q}");
        let v: serde_json::Value = r.json().await.unwrap();
        let param = q.split('=').next().unwrap();
        assert_eq!(v["error"]["fields"][0]["field"], param, "the error names the parameter: {v}");
    }
    pool.close().await;
    let r = client().get(format!("{base}/api/runs")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let text = r.text().await.unwrap();
    assert!(text.contains("internal error (reference") && !text.to_lowercase().contains("pool"), "{text}");
}
