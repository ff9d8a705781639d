//! An engine the worker started: a child process spawned from an argv (never a shell),
//! its output captured into a `LogRing`, killed if the worker dies (PDEATHSIG), stopped
//! with SIGTERM then SIGKILL.

use super::LogRing;
use anyhow::{bail, Context};
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

impl EngineProcess {
    /// Starts `program args...` with extra `env`, capturing its output.
    pub fn spawn(program: &str, args: &[String], env: &[(String, String)], log: LogRing) -> anyhow::Result<Self> {
        log.push_line(&format!("$ {program} {}", args.join(" ")));
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        // If the worker is killed (even with SIGKILL) the engine must not outlive it and
        // hold the GPU: the kernel sends it SIGKILL when its parent thread exits.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().with_context(|| format!("starting {program}"))?;
        let (tx, rx) = oneshot::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let out_log = log.clone();
        tokio::spawn(async move {
            let mut tx = Some(tx);
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("listening on ").map(str::trim) {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(url.to_string());
                    }
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
            if let Ok(r) = client.get(format!("{url}{path}")).send().await {
                if r.status().is_success() {
                    return Ok(());
                }
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
