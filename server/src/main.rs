//! `latlab`: serve the web app on the configured address, on the configured Postgres or a
//! private embedded cluster.

use anyhow::Context;
use server::embedded_pg::EmbeddedPostgres;
use server::{router, AppState, ServerConfig};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,tower_http=info")))
        .init();
    if let Err(e) = run().await {
        eprintln!("latlab: {e:#}");
        std::process::exit(1);
    }
}

async fn run() -> anyhow::Result<()> {
    let config = ServerConfig::from_env()?;
    let (url, embedded) = match &config.database_url {
        Some(url) => (url.clone(), None),
        None => {
            let pg = EmbeddedPostgres::new(&config.data_dir, config.pg_bin.as_deref())?;
            tracing::info!(cluster = %pg.cluster_dir().display(), "DATABASE_URL unset: starting the embedded Postgres cluster");
            let url = pg.start().await?;
            (url, Some(pg))
        }
    };
    let served = serve(&config, &url).await;
    if let Some(pg) = embedded {
        tracing::info!("stopping the embedded Postgres cluster");
        if let Err(e) = pg.stop() {
            tracing::error!(error = %e, "could not stop the embedded Postgres cluster");
        }
    }
    served
}

async fn serve(config: &ServerConfig, url: &str) -> anyhow::Result<()> {
    let pool = db::connect(url, config.db_max_connections).await.context("opening the database")?;
    let state = AppState::new(pool.clone(), &config.site_root.to_string_lossy(), config.addr);
    if !config.site_root.join("pkg").exists() {
        tracing::warn!(site_root = %config.site_root.display(), "no built site (pkg/) here: pages will render but not hydrate; build with scripts/serve.sh");
    }
    let listener = tokio::net::TcpListener::bind(config.addr).await.with_context(|| format!("binding {}", config.addr))?;
    tracing::info!("latlab listening on http://{}", listener.local_addr()?);
    axum::serve(listener, router(state)).with_graceful_shutdown(shutdown_signal()).await?;
    pool.close().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async { tokio::signal::ctrl_c().await.ok() };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => s.recv().await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}
