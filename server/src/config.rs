//! Configuration, read once from the environment into a typed, immutable struct.
//! Every variable is documented in the README.

use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `LATLAB_ADDR` (default `127.0.0.1:3000`).
    pub addr: SocketAddr,
    /// `DATABASE_URL`; unset = start the embedded Postgres cluster.
    pub database_url: Option<String>,
    /// `LATLAB_DATA_DIR`: where the embedded cluster lives.
    pub data_dir: PathBuf,
    /// `LATLAB_PG_BIN`: folder with `initdb`, `pg_ctl`, `postgres`; unset = search.
    pub pg_bin: Option<PathBuf>,
    /// `LATLAB_SITE_ROOT` (default `target/site`): the built wasm bundle, CSS and assets.
    pub site_root: PathBuf,
    /// `LATLAB_DB_MAX_CONNECTIONS` (default 10).
    pub db_max_connections: u32,
    /// Run workers: `LATLAB_WORKERS` slots (default 1 in `latlab`, 0 = none), lease and
    /// heartbeat (`LATLAB_LEASE_S` 30, `LATLAB_HEARTBEAT_S` 2), `LATLAB_ENGINE_BIN`
    /// (default: `latlab-engine` beside this binary), `LATLAB_RUN_TIME_LIMIT_S` (7200),
    /// `LATLAB_ENGINE_START_TIMEOUT_S` (900).
    pub worker: crate::worker::WorkerConfig,
    /// `LATLAB_API_TOKEN`: needed for writes. Required when `LATLAB_ADDR` is not loopback.
    /// Surrounding whitespace (a newline from `$(cat token-file)`) is not part of it.
    pub api_token: Option<String>,
    /// `LATLAB_ALLOWED_HOSTS`: host names requests may carry, beyond loopback names.
    /// Required when `LATLAB_ADDR` listens on every address.
    pub allowed_hosts: crate::request_guard::AllowedHosts,
    /// `LATLAB_SEED` (default 1): load the seed study as a reference comparison on first
    /// start; 0 starts with an empty store.
    pub load_seed: bool,
}

impl ServerConfig {
    pub fn from_env() -> anyhow::Result<Self> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        Self::from_lookup(|k| std::env::var(k).ok(), &vars)
    }

    /// Reads from any lookup function, so tests need not touch the process environment.
    /// `vars` is the whole environment (engines' pass-through list and API keys are
    /// picked from it).
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        vars: &[(String, String)],
    ) -> anyhow::Result<Self> {
        let non_empty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let addr = non_empty("LATLAB_ADDR").unwrap_or_else(|| "127.0.0.1:3000".into());
        let addr: SocketAddr = addr
            .parse()
            .with_context(|| format!("LATLAB_ADDR={addr:?} is not an address like 127.0.0.1:3000"))?;
        let db_max_connections = match non_empty("LATLAB_DB_MAX_CONNECTIONS") {
            None => 10,
            Some(v) => match v.parse::<u32>() {
                Ok(n) if (1..=1000).contains(&n) => n,
                _ => bail!("LATLAB_DB_MAX_CONNECTIONS={v:?} must be a whole number between 1 and 1000"),
            },
        };
        let secs = |k: &str, default: f64, max: f64| -> anyhow::Result<std::time::Duration> {
            match non_empty(k) {
                None => Ok(std::time::Duration::from_secs_f64(default)),
                Some(v) => match v.parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 && x <= max => {
                        Ok(std::time::Duration::from_secs_f64(x))
                    }
                    _ => bail!("{k}={v:?} must be a number of seconds above 0 and at most {max}"),
                },
            }
        };
        let slots = match non_empty("LATLAB_WORKERS") {
            None => 1,
            Some(v) => match v.parse::<u32>() {
                Ok(n) if n <= 64 => n,
                _ => bail!("LATLAB_WORKERS={v:?} must be a whole number from 0 to 64 (one per GPU)"),
            },
        };
        let lease = secs("LATLAB_LEASE_S", 30.0, 3600.0)?;
        let heartbeat = secs("LATLAB_HEARTBEAT_S", 2.0, 600.0)?;
        if heartbeat * 2 > lease {
            bail!(
                "LATLAB_HEARTBEAT_S must be at most half of LATLAB_LEASE_S, or a slow heartbeat loses the lease"
            );
        }
        let engine_bin = non_empty("LATLAB_ENGINE_BIN").map(PathBuf::from).unwrap_or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(|d| d.join("latlab-engine")))
                .unwrap_or_else(|| PathBuf::from("latlab-engine"))
        });
        let data_dir =
            non_empty("LATLAB_DATA_DIR").map(PathBuf::from).unwrap_or_else(|| default_data_dir(&get));
        let worker = crate::worker::WorkerConfig {
            id_prefix: crate::worker::default_id_prefix(),
            slots,
            lease,
            heartbeat,
            poll: std::time::Duration::from_millis(500),
            engine_bin,
            engine_start_timeout: secs("LATLAB_ENGINE_START_TIMEOUT_S", 900.0, 86_400.0)?,
            run_time_limit: secs("LATLAB_RUN_TIME_LIMIT_S", 7200.0, 7.0 * 86_400.0)?,
            telemetry_every: secs("LATLAB_TELEMETRY_S", 1.0, 60.0)?,
            telemetry_flush: secs("LATLAB_TELEMETRY_FLUSH_S", 10.0, 600.0)?,
            host: crate::worker::WorkerHost::from_lookup(&get, vars, &data_dir)?,
        };
        let api_token = non_empty("LATLAB_API_TOKEN").map(|t| t.trim().to_string());
        if let Some(t) = &api_token {
            if t.len() < 16 {
                bail!(
                    "LATLAB_API_TOKEN is too short: use at least 16 characters (e.g. `openssl rand -hex 24`)"
                );
            }
        } else if !addr.ip().is_loopback() {
            bail!(
                "LATLAB_ADDR={addr} listens beyond this machine: set LATLAB_API_TOKEN so that only people with the token can start runs"
            );
        }
        let load_seed = match non_empty("LATLAB_SEED").as_deref() {
            None | Some("1") => true,
            Some("0") => false,
            Some(v) => bail!("LATLAB_SEED={v:?} must be 0 or 1"),
        };
        let allowed_hosts =
            crate::request_guard::AllowedHosts::parse(non_empty("LATLAB_ALLOWED_HOSTS").as_deref(), addr)?;
        Ok(ServerConfig {
            allowed_hosts,
            load_seed,
            api_token,
            worker,
            addr,
            database_url: non_empty("DATABASE_URL"),
            data_dir,
            pg_bin: non_empty("LATLAB_PG_BIN").map(PathBuf::from),
            site_root: non_empty("LATLAB_SITE_ROOT")
                .map(PathBuf::from)
                .unwrap_or_else(|| "target/site".into()),
            db_max_connections,
        })
    }
}

/// Postgres refuses to run as root, so as root the cluster runs as the `postgres` user and
/// must live where that user can reach it (not under `/root`).
fn default_data_dir(get: &impl Fn(&str) -> Option<String>) -> PathBuf {
    if crate::embedded_pg::running_as_root() {
        return PathBuf::from("/var/lib/latlab");
    }
    if let Some(x) = get("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(x).join("latlab");
    }
    match get("HOME") {
        Some(h) => PathBuf::from(h).join(".local/share/latlab"),
        None => PathBuf::from(".latlab"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> anyhow::Result<ServerConfig> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let vars: Vec<(String, String)> = m.clone().into_iter().collect();
        ServerConfig::from_lookup(|k| m.get(k).cloned(), &vars)
    }

    #[test]
    fn defaults_listen_on_loopback_with_embedded_postgres() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.addr.to_string(), "127.0.0.1:3000");
        assert!(c.database_url.is_none());
        assert_eq!(c.db_max_connections, 10);
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = cfg(&[("LATLAB_ADDR", "localhost")]).unwrap_err().to_string();
        assert!(e.contains("LATLAB_ADDR"), "{e}");
        let e = cfg(&[("LATLAB_DB_MAX_CONNECTIONS", "0")]).unwrap_err().to_string();
        assert!(e.contains("LATLAB_DB_MAX_CONNECTIONS"), "{e}");
        assert_eq!(cfg(&[("DATABASE_URL", "  ")]).unwrap().database_url, None);
        let e = cfg(&[("LATLAB_WORKERS", "-1")]).unwrap_err().to_string();
        assert!(e.contains("LATLAB_WORKERS"), "{e}");
        let e = cfg(&[("LATLAB_LEASE_S", "4"), ("LATLAB_HEARTBEAT_S", "3")]).unwrap_err().to_string();
        assert!(e.contains("LATLAB_HEARTBEAT_S"), "{e}");
        let e = cfg(&[("LATLAB_ADDR", "0.0.0.0:3000")]).unwrap_err().to_string();
        assert!(e.contains("LATLAB_API_TOKEN"), "{e}");
        assert!(cfg(&[("LATLAB_ADDR", "0.0.0.0:3000"), ("LATLAB_API_TOKEN", "short")]).is_err());
        let e = cfg(&[("LATLAB_ADDR", "0.0.0.0:3000"), ("LATLAB_API_TOKEN", "0123456789abcdef0123")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("LATLAB_ALLOWED_HOSTS"), "{e}");
        let c = cfg(&[
            ("LATLAB_ADDR", "0.0.0.0:3000"),
            ("LATLAB_API_TOKEN", " 0123456789abcdef0123\n"),
            ("LATLAB_ALLOWED_HOSTS", "lab.example"),
        ])
        .unwrap();
        assert_eq!(
            c.api_token.as_deref(),
            Some("0123456789abcdef0123"),
            "whitespace around a token is not part of it"
        );
        let c =
            cfg(&[("LATLAB_WORKERS", "2"), ("LATLAB_LEASE_S", "3"), ("LATLAB_HEARTBEAT_S", "0.5")]).unwrap();
        assert_eq!(
            (c.worker.slots, c.worker.lease.as_millis(), c.worker.heartbeat.as_millis()),
            (2, 3000, 500)
        );
    }
}
