//! What every handler can reach: the pool and the Leptos options. Cloned per request
//! (cheap: both are reference-counted).

use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;
use sqlx::PgPool;

#[derive(Clone)]
pub struct AppState {
    pub pool: PgPool,
    pub leptos_options: LeptosOptions,
    /// Set when writes need the API token (latlab listens beyond loopback).
    pub auth: Option<crate::auth::Auth>,
    /// Host names requests may carry (`LATLAB_ALLOWED_HOSTS`).
    pub allowed_hosts: crate::request_guard::AllowedHosts,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(s: &AppState) -> Self {
        s.leptos_options.clone()
    }
}

impl AppState {
    /// Requires `token` for every write.
    pub fn with_api_token(mut self, token: Option<String>) -> Self {
        self.auth = token.map(crate::auth::Auth::new);
        self
    }

    /// Answers requests for these host names only.
    pub fn with_allowed_hosts(mut self, hosts: crate::request_guard::AllowedHosts) -> Self {
        self.allowed_hosts = hosts;
        self
    }

    pub fn new(pool: PgPool, site_root: &str, addr: std::net::SocketAddr) -> Self {
        let leptos_options = LeptosOptions::builder()
            .output_name("latlab")
            .site_root(site_root)
            .site_pkg_dir("pkg")
            .site_addr(addr)
            .build();
        AppState {
            pool,
            leptos_options,
            auth: None,
            allowed_hosts: crate::request_guard::AllowedHosts::loopback(),
        }
    }
}
