//! An engine the worker started: a child process spawned from an argv (never a shell),
//! with a cleared environment, as the host's engine user, in the engines' home; its
//! output captured into a `LogRing`, killed if the worker dies (PDEATHSIG), stopped with
//! SIGTERM then SIGKILL.

use super::LogRing;
use crate::unix_user::{UnixUser, may, unreachable_ancestor};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

pub struct EngineProcess {
    child: Child,
    pub log: LogRing,
    /// Set from the engine's "listening on http://..." line, when it prints one.
    listening: Option<oneshot::Receiver<String>>,
}

/// How to start one engine: everything the host decided, nothing a request chose.
pub struct Launch<'a> {
    /// The host's executable for the engine (a name is looked up in `PATH`).
    pub program: &'a Path,
    pub args: &'a [String],
    /// The engine's whole environment: nothing else is inherited.
    pub env: Vec<(String, String)>,
    /// Run as this user (latlab runs as root), or as latlab itself.
    pub user: Option<&'a UnixUser>,
    /// Working directory and HOME.
    pub home: &'a Path,
}

/// `program` as an absolute path: itself, or the first executable of that name in `path`.
fn find_program(program: &Path, path: Option<&str>) -> anyhow::Result<PathBuf> {
    if program.is_absolute() {
        return Ok(program.to_path_buf());
    }
    path.unwrap_or("/usr/local/bin:/usr/bin:/bin")
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| {
                m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            })
        })
        .with_context(|| format!("{} is not installed on this worker (not found in PATH)", program.display()))
}

/// Fails with the reason when `user` could not run `program` (a folder it cannot enter,
/// or a file it may not execute), instead of the child's bare "permission denied".
fn check_runnable(program: &Path, user: &UnixUser) -> anyhow::Result<()> {
    let hint = "install it where that user can reach it, or set LATLAB_ENGINE_USER";
    if let Some((dir, mode)) = unreachable_ancestor(program, user.uid, user.gid) {
        bail!(
            "the engine user {} cannot enter {} (mode {mode:o}) to run {}: {hint}",
            user.name,
            dir.display(),
            program.display()
        );
    }
    let m = std::fs::metadata(program).with_context(|| format!("reading {}", program.display()))?;
    if !may(&m, user.uid, user.gid, 0o1) {
        bail!("the engine user {} may not execute {}: {hint}", user.name, program.display());
    }
    Ok(())
}

impl EngineProcess {
    /// Starts the engine `launch` describes, capturing its output.
    pub fn spawn(launch: &Launch<'_>, log: LogRing) -> anyhow::Result<Self> {
        let path = launch.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str());
        let program = find_program(launch.program, path)?;
        if let Some(user) = launch.user {
            check_runnable(&program, user)?;
        }
        log.push_line(&format!("$ {} {}", program.display(), launch.args.join(" ")));
        let mut cmd = Command::new(&program);
        cmd.args(launch.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd.env_clear()
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .env("HOME", launch.home)
            .current_dir(launch.home);
        if let Some(user) = launch.user {
            // std drops supplementary groups (setgroups(0)) before setuid when root.
            cmd.uid(user.uid).gid(user.gid);
        }
        // If the worker is killed (even with SIGKILL) the engine must not outlive it and
        // hold the GPU: the kernel sends it SIGKILL when its parent thread exits. This runs
        // after the user change (which would clear it). No-new-privileges: nothing the
        // engine executes can gain privileges through setuid bits.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                    || libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let as_user = launch.user.map(|u| format!(" as {}", u.name)).unwrap_or_default();
        let mut child = cmd.spawn().with_context(|| format!("starting {}{as_user}", program.display()))?;
        let (tx, rx) = oneshot::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let out_log = log.clone();
        tokio::spawn(async move {
            let mut tx = Some(tx);
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("listening on ").map(str::trim)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(url.to_string());
                }
                out_log.push_line(&line);
            }
        });
        let err_log = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                err_log.push_line(&line);
            }
        });
        Ok(EngineProcess { child, log, listening: Some(rx) })
    }

    /// Waits for the "listening on <url>" line (latlab-engine prints it once the model is
    /// loaded and the port bound), then for `/health` to answer 200.
    pub async fn wait_listening(&mut self, timeout: Duration) -> anyhow::Result<String> {
        let rx = self.listening.take().context("already waited")?;
        let deadline = Instant::now() + timeout;
        let url = tokio::select! {
            r = rx => r.map_err(|_| anyhow::anyhow!("the engine exited before it was ready{}", self.exit_note()))?,
            _ = tokio::time::sleep_until(deadline.into()) => bail!("the engine was not ready after {} s", timeout.as_secs()),
        };
        self.wait_http_ready(&url, "/health", deadline.saturating_duration_since(Instant::now())).await?;
        Ok(url)
    }

    /// Polls `url + path` until it answers 200, the process exits, or `timeout` passes.
    pub async fn wait_http_ready(&mut self, url: &str, path: &str, timeout: Duration) -> anyhow::Result<()> {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(5)).build()?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the engine exited ({status}) before it was ready");
            }
            if let Ok(r) = client.get(format!("{url}{path}")).send().await
                && r.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("{url}{path} did not answer 200 within {} s", timeout.as_secs());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// `Some(status)` once the engine has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    fn exit_note(&mut self) -> String {
        match self.exited() {
            Some(s) => format!(" ({s})"),
            None => String::new(),
        }
    }

    /// SIGTERM, up to `grace` to exit, then SIGKILL.
    pub async fn stop(mut self, grace: Duration) {
        if self.exited().is_some() {
            return;
        }
        if let Some(pid) = self.child.id() {
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
        }
        if tokio::time::timeout(grace, self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
        self.log.push_line("[latlab] engine stopped");
    }
}
