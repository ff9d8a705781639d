//! Workers: claim queued runs from Postgres and execute them, one run per slot (a slot is
//! a GPU: one run per GPU at a time). They run inside `latlab` and as `latlab worker` on
//! other hosts; the database is the only thing they share.

mod engine_process;
mod execute;
pub mod file_roots;
pub mod host;
mod log_ring;
mod native;
mod outcome;
mod prometheus_text;
pub mod spec_scrape;
pub mod telemetry;

pub use engine_process::{EngineProcess, Launch};
pub use host::WorkerHost;
pub use log_ring::LogRing;

use bench::CancellationToken;
use sqlx::PgPool;
use std::path::PathBuf;
use std::time::Duration;

/// Immutable settings of a worker process (read from the environment in `ServerConfig`).
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Prefix of worker ids (`<host>:<pid>`); slot numbers are appended.
    pub id_prefix: String,
    /// Runs executed at once on this host (one per GPU).
    pub slots: u32,
    /// A run whose worker sends no heartbeat for this long becomes `interrupted`.
    pub lease: Duration,
    pub heartbeat: Duration,
    /// How often an idle worker looks for queued runs.
    pub poll: Duration,
    /// `latlab-engine` for native targets.
    pub engine_bin: PathBuf,
    /// Longest wait for an engine to load its model and answer.
    pub engine_start_timeout: Duration,
    /// Default wall-clock limit of one run (a spec may ask for less).
    pub run_time_limit: Duration,
    /// How often a run's target (`/metrics`) and GPUs (NVML) are sampled while it goes.
    pub telemetry_every: Duration,
    /// How often those samples are written to the database while the run goes.
    pub telemetry_flush: Duration,
    /// What the host decides: engines, their user and environment, file roots, API keys.
    pub host: WorkerHost,
}

impl WorkerConfig {
    pub fn worker_id(&self, slot: u32) -> String {
        format!("{}#{slot}", self.id_prefix)
    }
}

/// `<hostname>:<pid>`, so an interrupted run names the machine and process that vanished.
pub fn default_id_prefix() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    format!("{host}:{}", std::process::id())
}

/// Runs `cfg.slots` worker loops until `shutdown` is cancelled. A run in progress at
/// shutdown is cancelled and reported as such.
pub async fn run_workers(pool: PgPool, cfg: WorkerConfig, shutdown: CancellationToken) {
    if let Err(e) = prepare_engine_home(&cfg) {
        tracing::error!(error = %format!("{e:#}"), "engines cannot start on this worker until this is fixed");
    }
    let mut set = tokio::task::JoinSet::new();
    {
        let (pool, cfg, shutdown) = (pool.clone(), cfg.clone(), shutdown.clone());
        set.spawn(async move { expire_loop(pool, cfg, shutdown).await });
    }
    for slot in 0..cfg.slots {
        let (pool, cfg, shutdown) = (pool.clone(), cfg.clone(), shutdown.clone());
        set.spawn(async move { worker_loop(pool, cfg, slot, shutdown).await });
    }
    while set.join_next().await.is_some() {}
}

/// Expires other workers' leases on a task of its own, so that a slot busy with (or stuck
/// in) a run never holds up the queue.
async fn expire_loop(pool: PgPool, cfg: WorkerConfig, shutdown: CancellationToken) {
    while !shutdown.is_cancelled() {
        match db::queue::expire_leases(&pool).await {
            Ok(ids) if !ids.is_empty() => {
                tracing::warn!(runs = ?ids, "runs interrupted: their workers' leases expired")
            }
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "expiring leases"),
        }
        tokio::select! {
            _ = tokio::time::sleep(cfg.poll) => {}
            _ = shutdown.cancelled() => {}
        }
    }
}

/// The engines' home: owned by the engine user, private to it, reachable by it.
fn prepare_engine_home(cfg: &WorkerConfig) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::os::unix::fs::PermissionsExt;
    let home = &cfg.host.engine_home;
    std::fs::create_dir_all(home)
        .with_context(|| format!("creating the engines' home {}", home.display()))?;
    std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700))?;
    if let Some(u) = &cfg.host.engine_user {
        std::os::unix::fs::chown(home, Some(u.uid), Some(u.gid))
            .with_context(|| format!("giving {} to {}", home.display(), u.name))?;
        crate::unix_user::check_reachable(
            home,
            u,
            "set LATLAB_DATA_DIR to a folder that user can reach (e.g. /var/lib/latlab)",
        )?;
    }
    Ok(())
}

async fn worker_loop(pool: PgPool, cfg: WorkerConfig, slot: u32, shutdown: CancellationToken) {
    let id = cfg.worker_id(slot);
    tracing::info!(worker = %id, "worker started");
    while !shutdown.is_cancelled() {
        match db::queue::claim(&pool, &id, cfg.lease.as_secs_f64()).await {
            Ok(Some(run_id)) => {
                tracing::info!(worker = %id, run_id, "claimed run");
                execute::execute(&pool, &cfg, slot, &id, run_id, &shutdown).await;
                continue;
            }
            Ok(None) => {}
            Err(e) => tracing::error!(error = %e, "claiming a run"),
        }
        tokio::select! {
            _ = tokio::time::sleep(cfg.poll) => {}
            _ = shutdown.cancelled() => {}
        }
    }
    tracing::info!(worker = %id, "worker stopped");
}
