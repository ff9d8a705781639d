//! Checks every request before anything else sees it, with or without an API token:
//!
//! - **Host** must be a name latlab serves. A page on `rebind.attacker.example` whose DNS
//!   later points at 127.0.0.1 (DNS rebinding) reaches latlab with that Host, and is
//!   refused.
//! - **Writes must come from latlab's own pages, or from a program.** Browsers say where a
//!   request comes from (`Sec-Fetch-Site`, `Origin`); a write another site's page makes
//!   (a form POST, a `fetch`) is refused. Programs (curl, scripts, `latlab-bench`) send
//!   neither header and pass. The same rule as Go's `http.CrossOriginProtection`.

use crate::AppState;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The host names latlab answers to (`LATLAB_ALLOWED_HOSTS`, plus loopback names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHosts {
    /// `*`: any Host (only behind a proxy that checks it).
    Any,
    /// Lower-case names without port: `localhost`, `127.0.0.1`, `[::1]`, `lab.example.com`.
    Names(Vec<String>),
}

impl AllowedHosts {
    /// Loopback names only: the default when latlab listens on loopback.
    pub fn loopback() -> Self {
        AllowedHosts::Names(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()])
    }

    /// `LATLAB_ALLOWED_HOSTS` (comma-separated names, or `*`) for a server on `addr`.
    pub fn parse(setting: Option<&str>, addr: std::net::SocketAddr) -> anyhow::Result<Self> {
        let mut names = match Self::loopback() {
            AllowedHosts::Names(n) => n,
            AllowedHosts::Any => unreachable!(),
        };
        if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
            names.push(match addr.ip() {
                std::net::IpAddr::V6(ip) => format!("[{ip}]"),
                ip => ip.to_string(),
            });
        }
        match setting.map(str::trim).filter(|s| !s.is_empty()) {
            Some("*") => return Ok(AllowedHosts::Any),
            Some(list) => {
                for name in list.split(',').map(|n| n.trim().to_ascii_lowercase()).filter(|n| !n.is_empty()) {
                    let ok = name.chars().all(|c| c.is_ascii_alphanumeric() || "-.[]:".contains(c))
                        && !name.contains("://");
                    if !ok || (name.contains(':') && !name.starts_with('[')) {
                        anyhow::bail!(
                            "LATLAB_ALLOWED_HOSTS: {name:?} is not a host name (write lab.example.com or 10.0.0.5, no scheme, no port)"
                        );
                    }
                    names.push(name);
                }
            }
            None if addr.ip().is_unspecified() => anyhow::bail!(
                "LATLAB_ADDR={addr} listens on every address: set LATLAB_ALLOWED_HOSTS to the names people reach latlab by \
                 (e.g. lab.example.com,10.0.0.5), so that other sites cannot reach it through DNS rebinding"
            ),
            None => {}
        }
        Ok(AllowedHosts::Names(names))
    }

    fn allows(&self, host_header: &str) -> bool {
        match self {
            AllowedHosts::Any => true,
            AllowedHosts::Names(names) => {
                let name = host_name(host_header).to_ascii_lowercase();
                names.contains(&name)
            }
        }
    }
}

/// `lab.example:3000` -> `lab.example`; `[::1]:3000` -> `[::1]`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

fn is_read(m: &Method) -> bool {
    matches!(*m, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Why a write is refused as cross-origin, if it is.
pub fn cross_origin(headers: &HeaderMap) -> Option<String> {
    let get = |h| headers.get(h).and_then(|v| v.to_str().ok());
    match get("sec-fetch-site") {
        Some("same-origin" | "none") => return None,
        Some(site) => {
            return Some(format!("this write came from another site's page (Sec-Fetch-Site: {site})"));
        }
        None => {}
    }
    let origin = get(header::ORIGIN.as_str())?;
    let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    match (authority, get(header::HOST.as_str())) {
        (Some(a), Some(host)) if a.eq_ignore_ascii_case(host) => None,
        _ => Some(format!("this write came from another site's page (Origin: {origin})")),
    }
}

/// Middleware: the Host check for every request, the cross-origin check for every write.
pub async fn guard(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let h = req.headers();
    // A request without Host cannot come from a browser (which rebinding needs).
    if let Some(host) = h.get(header::HOST).and_then(|v| v.to_str().ok())
        && !st.allowed_hosts.allows(host)
    {
        tracing::warn!(host, "request refused: unknown Host");
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            &format!(
                "this latlab does not serve the host name {:?}; its operator lists the names it answers to in LATLAB_ALLOWED_HOSTS",
                host_name(host)
            ),
        );
    }
    if !is_read(req.method())
        && let Some(why) = cross_origin(h)
    {
        tracing::warn!(path = %req.uri().path(), why, "cross-origin write refused");
        return refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "cross-site request refused: {why}; latlab accepts writes only from its own pages or from programs"
            ),
        );
    }
    next.run(req).await
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": { "message": message, "fields": [] } }))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn browsers_from_other_sites_are_refused_and_programs_pass() {
        assert_eq!(cross_origin(&headers(&[("host", "127.0.0.1:3000")])), None, "curl sends neither header");
        assert_eq!(
            cross_origin(&headers(&[("host", "127.0.0.1:3000"), ("origin", "http://127.0.0.1:3000")])),
            None
        );
        assert_eq!(
            cross_origin(&headers(&[("sec-fetch-site", "same-origin"), ("origin", "http://x")])),
            None
        );
        assert!(
            cross_origin(&headers(&[("host", "127.0.0.1:3000"), ("origin", "http://evil.example")]))
                .is_some()
        );
        assert!(cross_origin(&headers(&[("host", "127.0.0.1:3000"), ("origin", "null")])).is_some());
        assert!(
            cross_origin(&headers(&[("host", "127.0.0.1:3000"), ("origin", "http://127.0.0.1:3001")]))
                .is_some(),
            "another port is another origin"
        );
        assert!(cross_origin(&headers(&[("sec-fetch-site", "same-site")])).is_some());
        assert!(
            cross_origin(&headers(&[
                ("sec-fetch-site", "cross-site"),
                ("origin", "http://127.0.0.1:3000"),
                ("host", "127.0.0.1:3000")
            ]))
            .is_some()
        );
    }

    #[test]
    fn hosts_are_loopback_names_plus_what_the_operator_lists() {
        let lo: std::net::SocketAddr = "127.0.0.1:3000".parse().unwrap();
        let h = AllowedHosts::parse(None, lo).unwrap();
        for ok in ["127.0.0.1:3000", "localhost:3000", "LOCALHOST", "[::1]:3000"] {
            assert!(h.allows(ok), "{ok}");
        }
        for bad in
            ["rebind.attacker.example", "rebind.attacker.example:3000", "127.0.0.1.nip.io:3000", "[::2]:3000"]
        {
            assert!(!h.allows(bad), "{bad}");
        }
        let any: std::net::SocketAddr = "0.0.0.0:3000".parse().unwrap();
        assert!(AllowedHosts::parse(None, any).unwrap_err().to_string().contains("LATLAB_ALLOWED_HOSTS"));
        let h = AllowedHosts::parse(Some("lab.example.com, 10.0.0.5"), any).unwrap();
        assert!(h.allows("lab.example.com:3000") && h.allows("10.0.0.5") && !h.allows("evil.example"));
        assert_eq!(AllowedHosts::parse(Some("*"), any).unwrap(), AllowedHosts::Any);
        assert!(AllowedHosts::parse(Some("http://lab.example"), any).is_err());
        assert!(AllowedHosts::parse(Some("lab.example:3000"), any).is_err());
        let ip: std::net::SocketAddr = "10.1.2.3:3000".parse().unwrap();
        assert!(AllowedHosts::parse(None, ip).unwrap().allows("10.1.2.3:3000"));
    }
}
