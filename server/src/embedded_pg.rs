//! A private Postgres cluster for the zero-configuration default: `initdb` once into the
//! data directory, `pg_ctl start` on a Unix socket inside it (no TCP port, so it neither
//! clashes with nor is reachable from anything else), `pg_ctl stop` on shutdown.
//!
//! Postgres refuses to run as root; when latlab runs as root, the cluster's processes run
//! as the system's `postgres` user (created by Debian's postgresql package) and its files
//! belong to that user.

use anyhow::{Context, bail};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const SUPERUSER: &str = "latlab";
const DATABASE: &str = "latlab";

pub use crate::unix_user::running_as_root;
use crate::unix_user::{check_reachable, lookup_user};

#[derive(Debug, Clone)]
pub struct EmbeddedPostgres {
    bin: PathBuf,
    /// `<data_dir>/postgres`: the cluster, which is also the socket directory.
    cluster: PathBuf,
    log: PathBuf,
    /// (uid, gid) to run the server as, when we are root.
    run_as: Option<(u32, u32)>,
}

impl EmbeddedPostgres {
    /// Prepares (but does not start) a cluster under `data_dir`.
    pub fn new(data_dir: &Path, pg_bin: Option<&Path>) -> anyhow::Result<Self> {
        let bin = match pg_bin {
            Some(b) => b.to_path_buf(),
            None => find_bin_dir().context(
                "no PostgreSQL server binaries found (looked for initdb in /usr/lib/postgresql/*/bin and PATH); \
                 install them (Debian: apt-get install postgresql), set LATLAB_PG_BIN, or set DATABASE_URL",
            )?,
        };
        for tool in ["initdb", "pg_ctl", "postgres"] {
            if !bin.join(tool).exists() {
                bail!(
                    "{} has no {tool}: LATLAB_PG_BIN must name the folder with initdb, pg_ctl and postgres",
                    bin.display()
                );
            }
        }
        let run_as = if running_as_root() {
            Some(lookup_user("postgres").map(|u| (u.uid, u.gid)).context(
                "latlab runs as root and Postgres refuses to: a 'postgres' system user is needed to run the embedded cluster \
                 (Debian's postgresql package creates it), or set DATABASE_URL",
            )?)
        } else {
            None
        };
        let data_dir = absolute(data_dir)?;
        Ok(EmbeddedPostgres {
            bin,
            cluster: data_dir.join("postgres"),
            log: data_dir.join("postgres.log"),
            run_as,
        })
    }

    pub fn cluster_dir(&self) -> &Path {
        &self.cluster
    }

    /// Initialises the cluster if needed, starts it (or adopts one left running by an
    /// earlier latlab that died), makes sure the `latlab` database exists, and returns
    /// its connection URL.
    pub async fn start(&self) -> anyhow::Result<String> {
        let parent = self.cluster.parent().expect("cluster dir has a parent");
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        if !self.cluster.join("PG_VERSION").exists() {
            self.init()?;
        }
        if !self.is_running()? {
            self.touch_log()?;
            let out = self
                .pg(Command::new(self.bin.join("pg_ctl")))
                .args(["-D"])
                .arg(&self.cluster)
                .args(["-l"])
                .arg(&self.log)
                .args(["-w", "-t", "60", "start"])
                .output()
                .context("running pg_ctl start")?;
            if !out.status.success() {
                bail!(
                    "pg_ctl start failed: {}{}\nlast lines of {}:\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                    self.log.display(),
                    tail(&self.log, 15)
                );
            }
        }
        let admin = self.url("postgres");
        db::ensure_database(&admin, DATABASE)
            .await
            .context("creating the latlab database in the embedded cluster")?;
        Ok(self.url(DATABASE))
    }

    /// Fast shutdown: open sessions are ended, committed data is safe.
    pub fn stop(&self) -> anyhow::Result<()> {
        if !self.is_running()? {
            return Ok(());
        }
        let out = self
            .pg(Command::new(self.bin.join("pg_ctl")))
            .args(["-D"])
            .arg(&self.cluster)
            .args(["-m", "fast", "-w", "stop"])
            .output()
            .context("running pg_ctl stop")?;
        if !out.status.success() {
            bail!("pg_ctl stop failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }

    /// `postgres://latlab@localhost/<db>?host=<socket dir>` (percent-encoded path).
    pub fn url(&self, database: &str) -> String {
        let host: String = self
            .cluster
            .to_string_lossy()
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        format!("postgres://{SUPERUSER}@localhost/{database}?host={host}")
    }

    fn init(&self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.cluster)
            .with_context(|| format!("creating {}", self.cluster.display()))?;
        std::fs::set_permissions(&self.cluster, std::fs::Permissions::from_mode(0o700))?;
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(&self.cluster, Some(uid), Some(gid))
                .with_context(|| format!("giving {} to the postgres user", self.cluster.display()))?;
            let user = crate::unix_user::UnixUser { name: "postgres".into(), uid, gid };
            check_reachable(
                &self.cluster,
                &user,
                "choose a LATLAB_DATA_DIR outside it, e.g. /var/lib/latlab",
            )?;
        }
        let out = self
            .pg(Command::new(self.bin.join("initdb")))
            .arg("-D")
            .arg(&self.cluster)
            .args(["-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--no-locale", "--no-instructions"])
            .output()
            .context("running initdb")?;
        if !out.status.success() {
            bail!(
                "initdb failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Unix socket only, inside the cluster directory (mode 0700): nothing else can reach it.
        let conf = format!(
            "\n# latlab embedded cluster\nlisten_addresses = ''\nunix_socket_directories = '{}'\nmax_connections = 50\n",
            self.cluster.display().to_string().replace('\'', "''")
        );
        let path = self.cluster.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&path).context("reading postgresql.conf")?;
        text.push_str(&conf);
        std::fs::write(&path, text).context("writing postgresql.conf")?;
        Ok(())
    }

    fn is_running(&self) -> anyhow::Result<bool> {
        if !self.cluster.join("PG_VERSION").exists() {
            return Ok(false);
        }
        let st = self
            .pg(Command::new(self.bin.join("pg_ctl")))
            .arg("-D")
            .arg(&self.cluster)
            .arg("status")
            .output()
            .context("running pg_ctl status")?;
        // pg_ctl status: 0 running, 3 not running, 4 no accessible data directory.
        Ok(st.status.code() == Some(0))
    }

    fn touch_log(&self) -> anyhow::Result<()> {
        if !self.log.exists() {
            std::fs::write(&self.log, b"")?;
        }
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(&self.log, Some(uid), Some(gid))?;
        }
        Ok(())
    }

    /// Runs Postgres tools as the cluster's owner, from a directory that owner can read.
    fn pg(&self, mut cmd: Command) -> Command {
        if let Some((uid, gid)) = self.run_as {
            cmd.uid(uid).gid(gid).current_dir("/");
        }
        cmd.env_remove("PGDATA");
        cmd
    }
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    if p.is_absolute() { Ok(p.to_path_buf()) } else { Ok(std::env::current_dir()?.join(p)) }
}

/// Highest installed version under Debian's layout, else whatever `initdb` is on PATH.
fn find_bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(PathBuf::from)
        .find(|d| d.join("initdb").exists() && d.join("pg_ctl").exists())
}

fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
