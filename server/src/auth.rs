//! Who may change things. Reading is open. Creating and cancelling runs needs the API
//! token (`LATLAB_API_TOKEN`) whenever latlab listens beyond loopback: as a bearer token
//! for programs, or as a session cookie for browsers (set by signing in at `/login`).
//! Cookie-authenticated writes must come from latlab's own pages (Origin check, and the
//! cookie is SameSite=Strict), so another site cannot forge them (CSRF).

use crate::AppState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::Form;
use sha2::{Digest, Sha256};

pub const COOKIE: &str = "latlab_session";

/// The configured token, when writes need one.
#[derive(Clone)]
pub struct Auth {
    token: String,
}

impl Auth {
    pub fn new(token: String) -> Self {
        Auth { token }
    }

    /// The cookie value: derived from the token, so the token itself never sits in a cookie.
    fn session_value(&self) -> String {
        let digest = Sha256::digest(format!("latlab-session:{}", self.token).as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| constant_time_eq(t.trim().as_bytes(), self.token.as_bytes()))
    }

    fn cookie_ok(&self, headers: &HeaderMap) -> bool {
        let want = self.session_value();
        headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|v| {
            v.split(';').filter_map(|kv| kv.trim().split_once('=')).any(|(k, val)| k == COOKIE && constant_time_eq(val.as_bytes(), want.as_bytes()))
        })
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A write from a page of this very site: Origin (or, failing that, Referer) names our host.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else { return false };
    let from = headers.get(header::ORIGIN).or_else(|| headers.get(header::REFERER)).and_then(|v| v.to_str().ok());
    from.is_some_and(|o| {
        let rest = o.strip_prefix("http://").or_else(|| o.strip_prefix("https://")).unwrap_or("");
        rest.split('/').next() == Some(host)
    })
}

fn is_read(m: &Method) -> bool {
    matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Middleware: lets reads through; writes need the bearer token, or the session cookie
/// from a same-origin page. Without a configured token (loopback only) everything passes.
pub async fn require_for_writes(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let Some(auth) = st.auth.as_ref() else { return next.run(req).await };
    if is_read(req.method()) || req.uri().path() == "/login" {
        return next.run(req).await;
    }
    let h = req.headers();
    if auth.bearer_ok(h) {
        return next.run(req).await;
    }
    if auth.cookie_ok(h) {
        if same_origin(h) {
            return next.run(req).await;
        }
        return deny(StatusCode::FORBIDDEN, "cross-site request refused: writes with the session cookie must come from latlab's own pages");
    }
    deny(StatusCode::UNAUTHORIZED, "creating or changing runs needs the API token: send 'Authorization: Bearer <token>', or sign in at /login")
}

fn deny(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": { "message": message, "fields": [] } }))).into_response()
}

const LOGIN_PAGE: &str = r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Sign in · latlab</title>
<link rel="stylesheet" href="/pkg/latlab.css"></head><body><main><h1>Sign in</h1>
<p>This latlab accepts new runs only from people with its API token (LATLAB_API_TOKEN).</p>
{error}<form method="post" action="/login" class="run-form"><div class="field"><label for="token">API token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required></div>
<button type="submit">Sign in</button></form></main></body></html>"#;

pub async fn login_page() -> Html<String> {
    Html(LOGIN_PAGE.replace("{error}", ""))
}

#[derive(serde::Deserialize)]
pub struct LoginForm {
    token: String,
}

/// Checks the token and sets the session cookie (HttpOnly, SameSite=Strict, 30 days).
pub async fn login(State(st): State<AppState>, Form(f): Form<LoginForm>) -> Response {
    let Some(auth) = st.auth.as_ref() else { return Redirect::to("/").into_response() };
    if !constant_time_eq(f.token.trim().as_bytes(), auth.token.as_bytes()) {
        let page = LOGIN_PAGE.replace("{error}", r#"<p class="error" role="alert">That is not this latlab's API token.</p>"#);
        return (StatusCode::UNAUTHORIZED, Html(page)).into_response();
    }
    let cookie = format!("{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000", auth.session_value());
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(header::LOCATION, "/")
        .header(header::SET_COOKIE, cookie)
        .body(Body::empty())
        .expect("static response parts")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_must_name_our_host() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, "lab.example:3000".parse().unwrap());
        assert!(!same_origin(&h), "no Origin, no Referer");
        h.insert(header::ORIGIN, "http://evil.example".parse().unwrap());
        assert!(!same_origin(&h));
        h.insert(header::ORIGIN, "http://lab.example:3000".parse().unwrap());
        assert!(same_origin(&h));
    }

    #[test]
    fn tokens_compare_exactly() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
