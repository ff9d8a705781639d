//! `latlab`: serve the web app (with run workers inside), or be a worker only on another
//! host. Postgres is the configured one or a private embedded cluster.

use anyhow::Context;
use bench::CancellationToken;
use clap::{Parser, Subcommand};
use server::embedded_pg::EmbeddedPostgres;
use server::{AppState, ServerConfig, router};
use tracing_subscriber::EnvFilter;

/// latlab: a latency lab for LLM serving. Configuration comes from the environment
/// (see the README: LATLAB_ADDR, DATABASE_URL, LATLAB_DATA_DIR, LATLAB_WORKERS, ...).
#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the web app and JSON API, with LATLAB_WORKERS run workers inside (default).
    Serve,
    /// Only run workers: claim queued runs from DATABASE_URL's database and execute them
    /// (one per slot/GPU). This is how latlab grows past one machine.
    Worker,
    /// End every signed-in browser session now (programs using the token are unaffected).
    RevokeSessions,
    /// Add synthetic runs to DATABASE_URL's database, for speed measurements: RUNS runs over
    /// several engines, models, hardware, statuses and tags, REQUESTS request records, and
    /// one run with 1,000 requests and 600 telemetry samples. Serve it with
    /// LATLAB_WORKERS=0, or workers take its queued runs.
    SeedRuns { runs: i64, requests: i64 },
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,tower_http=info")),
        )
        .init();
    if let Err(e) = run(cli.command.unwrap_or(Cmd::Serve)).await {
        eprintln!("latlab: {e:#}");
        std::process::exit(1);
    }
}

async fn run(cmd: Cmd) -> anyhow::Result<()> {
    let config = ServerConfig::from_env()?;
    let (url, embedded) = match (&config.database_url, &cmd) {
        (Some(url), _) => (url.clone(), None),
        (None, Cmd::Worker | Cmd::SeedRuns { .. }) => {
            anyhow::bail!(
                "`latlab worker` and `latlab seed-runs` need DATABASE_URL: the database the web server uses"
            )
        }
        (None, Cmd::Serve | Cmd::RevokeSessions) => {
            let pg = EmbeddedPostgres::new(&config.data_dir, config.pg_bin.as_deref())?;
            tracing::info!(cluster = %pg.cluster_dir().display(), "DATABASE_URL unset: starting the embedded Postgres cluster");
            let url = pg.start().await?;
            (url, Some(pg))
        }
    };
    let result = match cmd {
        Cmd::Serve => serve(&config, &url).await,
        Cmd::Worker => work(&config, &url).await,
        Cmd::RevokeSessions => revoke_sessions(&config, &url).await,
        Cmd::SeedRuns { runs, requests } => seed_runs(&config, &url, runs, requests).await,
    };
    if let Some(pg) = embedded {
        tracing::info!("stopping the embedded Postgres cluster");
        if let Err(e) = pg.stop() {
            tracing::error!(error = %e, "could not stop the embedded Postgres cluster");
        }
    }
    result
}

async fn serve(config: &ServerConfig, url: &str) -> anyhow::Result<()> {
    let pool = db::connect(url, config.db_max_connections).await.context("opening the database")?;
    let state = AppState::new(pool.clone(), &config.site_root.to_string_lossy(), config.addr)
        .with_api_token(config.api_token.clone())
        .with_allowed_hosts(config.allowed_hosts.clone());
    if let Some(auth) = &state.auth {
        let n = db::sessions::purge(&pool, auth.fingerprint()).await.context("cleaning up sessions")?;
        tracing::info!(removed = n, "old sign-in sessions removed");
    }
    // The reference comparison, stored once (later starts find it and skip).
    if config.load_seed {
        server::seed::load(&pool).await.context("loading the seed study")?;
    }
    if !config.site_root.join("pkg").exists() {
        tracing::warn!(site_root = %config.site_root.display(), "no built site (pkg/) here: pages will render but not hydrate; build with scripts/build.sh");
    }
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("binding {}", config.addr))?;
    let shutdown = CancellationToken::new();
    let workers =
        tokio::spawn(server::worker::run_workers(pool.clone(), config.worker.clone(), shutdown.clone()));
    tracing::info!(
        "latlab listening on http://{} ({} run worker slot(s))",
        listener.local_addr()?,
        config.worker.slots
    );
    // Client addresses feed the sign-in limiter.
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    let served = axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await;
    shutdown.cancel();
    let _ = workers.await;
    pool.close().await;
    Ok(served?)
}

async fn work(config: &ServerConfig, url: &str) -> anyhow::Result<()> {
    if config.worker.slots == 0 {
        anyhow::bail!("LATLAB_WORKERS=0: a worker process needs at least one slot");
    }
    let pool = db::connect(url, config.db_max_connections).await.context("opening the database")?;
    let shutdown = CancellationToken::new();
    let workers =
        tokio::spawn(server::worker::run_workers(pool.clone(), config.worker.clone(), shutdown.clone()));
    tracing::info!("latlab worker: {} slot(s)", config.worker.slots);
    shutdown_signal().await;
    shutdown.cancel();
    let _ = workers.await;
    pool.close().await;
    Ok(())
}

async fn revoke_sessions(config: &ServerConfig, url: &str) -> anyhow::Result<()> {
    let pool = db::connect(url, config.db_max_connections.min(2)).await.context("opening the database")?;
    let n = db::sessions::revoke_all(&pool).await?;
    println!("revoked {n} session(s)");
    pool.close().await;
    Ok(())
}

async fn seed_runs(config: &ServerConfig, url: &str, runs: i64, requests: i64) -> anyhow::Result<()> {
    anyhow::ensure!(runs >= 1 && requests >= 0, "seed-runs: RUNS must be at least 1 and REQUESTS at least 0");
    let pool = db::connect(url, config.db_max_connections.min(2)).await.context("opening the database")?;
    let started = std::time::Instant::now();
    let s = db::seed_runs::seed(&pool, runs, requests).await.context("seeding runs")?;
    println!(
        "seeded {} runs (#{}..#{}) with {} request records, and the large run #{} ({} requests, {} telemetry samples) in {:.1} s",
        s.run_ids.len(),
        s.run_ids.first().unwrap_or(&0),
        s.run_ids.last().unwrap_or(&0),
        s.requests,
        s.large_run,
        db::seed_runs::LARGE_RUN_REQUESTS,
        db::seed_runs::LARGE_RUN_SAMPLES,
        started.elapsed().as_secs_f64()
    );
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
