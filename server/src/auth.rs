//! Who may change things. Reading is open. When an API token is configured
//! (`LATLAB_API_TOKEN`; required beyond loopback), creating and cancelling runs and
//! importing need it: as a bearer token for programs, or as a session for browsers, made
//! by signing in at `/login`. Where a write may come from is `request_guard`'s business and
//! applies with or without a token.
//!
//! Sessions: a random 256-bit id in an HttpOnly, SameSite=Strict cookie (`Secure` behind
//! HTTPS), stored only as its SHA-256, valid for `SESSION_TTL`, revocable (sign-out,
//! `latlab revoke-sessions`, or a new token). Failed sign-ins are logged with the client's
//! address and limited per address.

use crate::AppState;
use axum::Form;
use axum::body::Body;
use axum::extract::{ConnectInfo, FromRequest, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const COOKIE: &str = "latlab_session";
/// How long a session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// Failed sign-ins allowed per client address within `LOGIN_WINDOW`.
pub const LOGIN_FAILURES: u32 = 10;
pub const LOGIN_WINDOW: Duration = Duration::from_secs(600);

/// The configured token, and what sessions are checked against.
#[derive(Clone)]
pub struct Auth {
    token: String,
    /// PBKDF2 of the token: stored with each session so that sessions signed in with a
    /// replaced token stop working, without putting anything cheap to guess in the table.
    fingerprint: Vec<u8>,
    limiter: Arc<Mutex<HashMap<IpAddr, (Instant, u32)>>>,
}

impl Auth {
    pub fn new(token: String) -> Self {
        let token = token.trim().to_string();
        let mut fingerprint = vec![0u8; 32];
        pbkdf2::pbkdf2_hmac::<Sha256>(
            token.as_bytes(),
            b"latlab-session-token-fingerprint",
            100_000,
            &mut fingerprint,
        );
        Auth { token, fingerprint, limiter: Arc::default() }
    }

    pub fn fingerprint(&self) -> &[u8] {
        &self.fingerprint
    }

    fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| constant_time_eq(t.trim().as_bytes(), self.token.as_bytes()))
    }

    /// Seconds until `ip` may try again, when it has failed too often.
    fn blocked_for(&self, ip: IpAddr) -> Option<u64> {
        let map = self.limiter.lock().expect("limiter lock");
        map.get(&ip).and_then(|&(start, n)| {
            let left = LOGIN_WINDOW.saturating_sub(start.elapsed());
            (n >= LOGIN_FAILURES && !left.is_zero()).then(|| left.as_secs().max(1))
        })
    }

    fn record_failure(&self, ip: IpAddr) -> u32 {
        let mut map = self.limiter.lock().expect("limiter lock");
        if map.len() > 10_000 {
            map.retain(|_, (start, _)| start.elapsed() < LOGIN_WINDOW);
        }
        let entry = map.entry(ip).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= LOGIN_WINDOW {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
        entry.1
    }

    fn forget(&self, ip: IpAddr) {
        self.limiter.lock().expect("limiter lock").remove(&ip);
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hash_id(id: &str) -> Vec<u8> {
    Sha256::digest(id.as_bytes()).to_vec()
}

/// The session id the request's cookie carries, if any.
fn session_id(headers: &HeaderMap) -> Option<String> {
    headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|v| {
        v.split(';')
            .filter_map(|kv| kv.trim().split_once('='))
            .find(|(k, _)| *k == COOKIE)
            .map(|(_, val)| val.to_string())
    })
}

fn is_read(m: &Method) -> bool {
    matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The client's address, when the server recorded it (not in `oneshot` tests).
fn client_ip(req_extensions: &axum::http::Extensions) -> IpAddr {
    req_extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip()).unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

/// Middleware: lets reads through; writes need the bearer token or a live session.
/// Without a configured token (loopback only) every write passes.
pub async fn require_for_writes(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let Some(auth) = st.auth.as_ref() else { return next.run(req).await };
    if is_read(req.method()) || matches!(req.uri().path(), "/login" | "/logout") {
        return next.run(req).await;
    }
    let h = req.headers();
    if auth.bearer_ok(h) {
        return next.run(req).await;
    }
    if let Some(id) = session_id(h) {
        match db::sessions::is_live(&st.pool, &hash_id(&id), auth.fingerprint()).await {
            Ok(true) => return next.run(req).await,
            Ok(false) => {}
            Err(e) => {
                tracing::error!(error = %e, "checking a session");
                return deny(StatusCode::SERVICE_UNAVAILABLE, "could not check the session; try again");
            }
        }
    }
    deny(
        StatusCode::UNAUTHORIZED,
        "creating or changing runs needs the API token: send 'Authorization: Bearer <token>', or sign in at /login",
    )
}

fn deny(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": { "message": message, "fields": [] } }))).into_response()
}

const LOGIN_PAGE: &str = r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Sign in · latlab</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
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

fn login_error(status: StatusCode, message: &str) -> Response {
    let page = LOGIN_PAGE.replace("{error}", &format!(r#"<p class="error" role="alert">{message}</p>"#));
    (status, Html(page)).into_response()
}

/// Whether the browser reached us over HTTPS (directly or through a proxy that says so).
fn over_https(headers: &HeaderMap) -> bool {
    let get = |h: &str| headers.get(h).and_then(|v| v.to_str().ok()).unwrap_or("");
    get("x-forwarded-proto").eq_ignore_ascii_case("https") || get("origin").starts_with("https://")
}

/// Checks the token; on success stores a new session and sets its cookie.
pub async fn login(State(st): State<AppState>, req: Request) -> Response {
    let Some(auth) = st.auth.clone() else { return Redirect::to("/").into_response() };
    let ip = client_ip(req.extensions());
    let headers = req.headers().clone();
    let agent: String = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .chars()
        .take(120)
        .collect();
    if let Some(wait) = auth.blocked_for(ip) {
        tracing::warn!(%ip, "sign-in refused: too many failed attempts");
        let mut r = login_error(
            StatusCode::TOO_MANY_REQUESTS,
            &format!("Too many failed sign-ins from this address; try again in {wait} s."),
        );
        r.headers_mut().insert(header::RETRY_AFTER, wait.into());
        return r;
    }
    let Ok(Form(f)) = Form::<LoginForm>::from_request(req, &st).await else {
        return login_error(StatusCode::BAD_REQUEST, "Send the form's token field.");
    };
    if !constant_time_eq(f.token.trim().as_bytes(), auth.token.as_bytes()) {
        let n = auth.record_failure(ip);
        tracing::warn!(%ip, user_agent = %agent, failures = n, "failed sign-in");
        return login_error(StatusCode::UNAUTHORIZED, "That is not this latlab's API token.");
    }
    auth.forget(ip);
    let id: String = rand::random::<[u8; 32]>().iter().map(|b| format!("{b:02x}")).collect();
    let client = format!("{ip} {agent}");
    if let Err(e) =
        db::sessions::create(&st.pool, &hash_id(&id), auth.fingerprint(), SESSION_TTL.as_secs_f64(), &client)
            .await
    {
        tracing::error!(error = %e, "storing a session");
        return login_error(StatusCode::SERVICE_UNAVAILABLE, "Could not start a session; try again.");
    }
    tracing::info!(%ip, user_agent = %agent, "signed in");
    let secure = if over_https(&headers) { "; Secure" } else { "" };
    let cookie = format!(
        "{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        SESSION_TTL.as_secs()
    );
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(header::LOCATION, "/")
        .header(header::SET_COOKIE, cookie)
        .body(Body::empty())
        .expect("static response parts")
}

/// Ends the request's session (if any) and clears its cookie.
pub async fn logout(State(st): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(id) = session_id(&headers)
        && let Err(e) = db::sessions::revoke(&st.pool, &hash_id(&id)).await
    {
        tracing::error!(error = %e, "revoking a session");
        return deny(StatusCode::SERVICE_UNAVAILABLE, "could not end the session; try again");
    }
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(header::LOCATION, "/")
        .header(header::SET_COOKIE, format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"))
        .body(Body::empty())
        .expect("static response parts")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_exactly_and_surrounding_space_is_not_part_of_them() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        let a = Auth::new("  token-0123456789abcdef\n".into());
        assert_eq!(a.token, "token-0123456789abcdef");
        assert_eq!(a.fingerprint(), Auth::new("token-0123456789abcdef".into()).fingerprint());
        assert_ne!(a.fingerprint(), Auth::new("token-0123456789abcdeX".into()).fingerprint());
    }

    #[test]
    fn an_address_is_blocked_after_its_failures_and_only_that_address() {
        let a = Auth::new("token-0123456789abcdef".into());
        let (x, y): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        for _ in 0..LOGIN_FAILURES - 1 {
            a.record_failure(x);
        }
        assert_eq!(a.blocked_for(x), None);
        a.record_failure(x);
        assert!(a.blocked_for(x).is_some_and(|s| s > 500));
        assert_eq!(a.blocked_for(y), None);
        a.forget(x);
        assert_eq!(a.blocked_for(x), None);
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, "a=1; latlab_session=abc; b=2".parse().unwrap());
        assert_eq!(session_id(&h).as_deref(), Some("abc"));
    }
}
