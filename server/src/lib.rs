//! The `latlab` web server: pages (Leptos SSR + hydration), the JSON API, and the
//! embedded Postgres it starts when no `DATABASE_URL` is given. `main.rs` is a thin shell
//! over this library so tests drive the same `router(state)`.

pub mod api;
pub mod auth;
pub mod compare_form;
pub mod config;
pub mod embedded_pg;
pub mod import_page;
pub mod request_guard;
pub mod router;
pub mod run_admin;
pub mod run_forms;
pub mod seed;
pub mod state;
pub mod store;
pub mod unix_user;
pub mod worker;

pub use config::ServerConfig;
pub use router::router;
pub use state::AppState;
