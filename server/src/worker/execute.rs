//! One claimed run, start to end: reach or start the target, benchmark it through the
//! `bench` library while a heartbeat task renews the lease and publishes progress, then
//! store the report in one transaction — or record why it failed, was cancelled, or
//! (lease lost) write nothing at all.

use super::outcome::Failure;
use super::spec_scrape::SpecScrape;
use super::{EngineProcess, Launch, LogRing, WorkerConfig};
use bench::{CancellationToken, Progress, RunOptions};
use bench_types::{BenchReport, RunProgress, RunSpec, RunStatus, Target};
use db::queue::Lease;
use sqlx::PgPool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why the bench was told to stop early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopReason {
    CancelRequested,
    TimeLimit,
    LeaseLost,
    Shutdown,
}

pub async fn execute(
    pool: &PgPool,
    cfg: &WorkerConfig,
    slot: u32,
    worker: &str,
    run_id: i64,
    shutdown: &CancellationToken,
) {
    let run = match db::runs::get(pool, run_id).await {
        Ok(Some(r)) => r,
        Ok(None) => return,
        Err(e) => {
            tracing::error!(run_id, error = %e, "reading a claimed run");
            let _ = db::queue::finish(
                pool,
                run_id,
                worker,
                RunStatus::Failed,
                &format!("could not read the run: {e}"),
            )
            .await;
            return;
        }
    };
    let spec = run.spec;
    let log = LogRing::redacting(cfg.host.secrets.iter().map(|s| s.expose().to_string()));
    let cancel = CancellationToken::new();
    let reason: Arc<Mutex<Option<StopReason>>> = Arc::default();
    let (progress_tx, progress_rx) = tokio::sync::watch::channel(Progress::default());
    let phase: Arc<Mutex<&'static str>> = Arc::new(Mutex::new("starting target"));
    let limit =
        spec.time_limit_s.map(Duration::from_secs_f64).unwrap_or(cfg.run_time_limit).min(cfg.run_time_limit);
    let started = Instant::now();

    // Heartbeats: renew the lease, publish progress and the log tail, watch for cancel,
    // the time limit and shutdown. Runs during engine start-up too, which can be long.
    let hb = {
        let (pool, worker, cancel, reason, log, phase) =
            (pool.clone(), worker.to_string(), cancel.clone(), reason.clone(), log.clone(), phase.clone());
        let (lease_s, every, shutdown) = (cfg.lease.as_secs_f64(), cfg.heartbeat, shutdown.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = cancel.cancelled() => break,
                }
                let stop = |r: StopReason| {
                    reason.lock().unwrap().get_or_insert(r);
                    cancel.cancel();
                };
                if shutdown.is_cancelled() {
                    stop(StopReason::Shutdown);
                }
                if started.elapsed() > limit {
                    stop(StopReason::TimeLimit);
                }
                let p = progress_rx.borrow().clone();
                let published = to_run_progress(&p, *phase.lock().unwrap(), &worker);
                match db::queue::heartbeat(&pool, run_id, &worker, lease_s, &published).await {
                    Ok(Lease::Held) => {}
                    Ok(Lease::CancelRequested) => stop(StopReason::CancelRequested),
                    Ok(Lease::Lost) => stop(StopReason::LeaseLost),
                    Err(e) => tracing::warn!(run_id, error = %e, "heartbeat failed; retrying"),
                }
                let _ = db::queue::save_log(&pool, run_id, &log.snapshot()).await;
            }
        })
    };

    // Telemetry is stored as it is sampled, the last batch before run_target returns: before
    // the result, so that a finished run's page has its telemetry from the start.
    let sink = super::telemetry::Sink { pool: pool.clone(), run_id, every: cfg.telemetry_flush };
    let outcome = run_target(&spec, cfg, slot, &log, &cancel, progress_tx, &phase, sink).await;
    cancel.cancel();
    let _ = hb.await;
    let stop = *reason.lock().unwrap();
    let _ = db::queue::save_log(pool, run_id, &log.snapshot()).await;

    // What finished is kept: a complete report, or the requests done before a stop.
    let partial = |o: Result<BenchReport, Failure>| match o {
        Ok(r) => Some(Box::new(r)),
        Err(f) => f.partial,
    };
    let (status, message, report, end) = match (outcome, stop) {
        (_, Some(StopReason::LeaseLost)) => {
            tracing::warn!(run_id, "lease lost; nothing stored");
            return;
        }
        (Ok(report), None) => {
            let end = super::outcome::end_of(&report);
            (end.status, end.note.clone().unwrap_or_default(), Some(Box::new(report)), Some(end))
        }
        (o, Some(StopReason::CancelRequested)) => {
            (RunStatus::Cancelled, "cancelled on request".to_string(), partial(o), None)
        }
        (o, Some(StopReason::Shutdown)) => {
            (RunStatus::Cancelled, "the worker shut down during the run".to_string(), partial(o), None)
        }
        (o, Some(StopReason::TimeLimit)) => {
            (RunStatus::Failed, format!("time limit of {} s reached", limit.as_secs()), partial(o), None)
        }
        (Err(f), None) => (RunStatus::Failed, f.message, f.partial, None),
    };
    let (status, message) = match report {
        Some(report) => {
            *phase.lock().unwrap() = "storing";
            let end = end.unwrap_or_else(|| super::outcome::end_partway(status, &message, &report));
            match db::results::store_report(pool, run_id, &report, &end).await {
                Ok(()) => {
                    tracing::info!(run_id, status = %end.status, note = ?end.note, "run ended with a result");
                    return;
                }
                Err(e) => (RunStatus::Failed, format!("could not store the result: {e}")),
            }
        }
        None => (status, message),
    };
    let result = (status, message);
    tracing::info!(run_id, status = %result.0, error = %result.1, "run ended");
    if let Err(e) = db::queue::finish(pool, run_id, worker, result.0, &result.1).await {
        tracing::error!(run_id, error = %e, "recording the end of a run");
    }
}

fn to_run_progress(p: &Progress, phase: &str, worker: &str) -> RunProgress {
    let phase = if phase == "benchmarking" {
        match p.phase {
            bench::Phase::Preparing => "preparing dataset",
            bench::Phase::Warmup => "warm-up",
            bench::Phase::Measuring => "measuring",
            bench::Phase::Finished => "finished",
        }
    } else {
        phase
    };
    RunProgress {
        phase: phase.to_string(),
        completed: p.completed,
        failed: p.failed,
        total: p.total,
        elapsed_s: p.elapsed_s,
        rolling_ttft_ms: p.rolling_ttft_ms,
        rolling_tpot_ms: p.rolling_tpot_ms,
        worker: worker.to_string(),
    }
}

/// Reaches or starts the target and benchmarks it, sampling its telemetry meanwhile (into
/// `telemetry`, as it goes). A failure's message is what the run page shows; it may carry the
/// requests that finished before the run stopped.
#[allow(clippy::too_many_arguments)]
async fn run_target(
    spec: &RunSpec,
    cfg: &WorkerConfig,
    slot: u32,
    log: &LogRing,
    cancel: &CancellationToken,
    progress: bench::ProgressTx,
    phase: &Mutex<&'static str>,
    telemetry: super::telemetry::Sink,
) -> Result<BenchReport, Failure> {
    // Files the spec names are read only under this host's roots, by their real paths.
    let spec = &cfg.host.roots.resolve_spec(spec)?;
    let (base_url, api_key, engine) = match &spec.target {
        Target::External { base_url, api_key_env } => {
            let key = match api_key_env {
                None => None,
                Some(name) => Some(cfg.host.api_key(name)?.expose().to_string()),
            };
            (base_url.trim_end_matches('/').to_string(), key, None)
        }
        Target::Native(n) => {
            let args = super::native::engine_args(n, &spec.model);
            let mut extra = cfg.host.native_env.clone();
            let assets = super::file_roots::real_or_given(&cfg.host.roots.assets);
            extra.push(("LATLAB_ASSETS_DIR".into(), assets.to_string_lossy().into_owned()));
            if !n.cuda_graphs {
                // The engine reads this at start (engine/src/model/cuda): decode runs eagerly.
                extra.push(("LATLAB_CUDA_GRAPHS".to_string(), "0".to_string()));
            }
            let launch = engine_launch(cfg, slot, &cfg.engine_bin, &args, extra);
            let mut p = EngineProcess::spawn(&launch, log.clone()).map_err(|e| format!("{e:#}"))?;
            let url = tokio::select! {
                r = p.wait_listening(cfg.engine_start_timeout) => r.map_err(|e| format!("{e:#}"))?,
                _ = cancel.cancelled() => { p.stop(Duration::from_secs(5)).await; return Err(Failure::from("stopped while the engine started".to_string())); }
            };
            (url, None, Some(p))
        }
        Target::Launched(l) => {
            let program = cfg.host.program_for(l.engine)?;
            let port = free_port().map_err(|e| format!("no free port for the engine: {e}"))?;
            let dir = launch_dir(cfg, slot)?;
            // Validated again here: bad options never start anything.
            let cmd = l
                .command(Some(port), &dir.to_string_lossy())
                .map_err(|e| format!("invalid launch options: {e}"))?;
            for (name, content) in &cmd.files {
                let path = dir.join(name);
                std::fs::write(&path, content).map_err(|e| format!("writing {}: {e}", path.display()))?;
            }
            let launch = engine_launch(cfg, slot, &program, &cmd.args, cmd.env.clone());
            let mut p = EngineProcess::spawn(&launch, log.clone()).map_err(|e| format!("{e:#}"))?;
            let url = format!("http://127.0.0.1:{port}");
            tokio::select! {
                r = p.wait_http_ready(&url, "/health", cfg.engine_start_timeout) => r.map_err(|e| format!("{e:#}"))?,
                _ = cancel.cancelled() => { p.stop(Duration::from_secs(5)).await; return Err(Failure::from("stopped while the engine started".to_string())); }
            }
            (url, None, Some(p))
        }
        Target::Imported(_) => return Err(Failure::from("imported results are not run".to_string())),
    };
    *phase.lock().unwrap() = "benchmarking";
    // A speculating native engine's counters are read around the measured part.
    let scrape = match &spec.target {
        Target::Native(n) => n.speculative.as_ref().map(|s| (s, SpecScrape::new(&base_url))),
        _ => None,
    };
    let opts = RunOptions {
        api_key,
        progress: Some(progress),
        cancel: cancel.clone(),
        before_measuring: scrape.as_ref().map(|(_, s)| s.hook()),
    };
    // This host's GPUs belong to the run only when this worker started the engine on them.
    let devices = engine.as_ref().map(|_| {
        if cfg.slots > 1 { super::telemetry::Devices::Only(slot) } else { super::telemetry::Devices::All }
    });
    let sampling = super::telemetry::start(&base_url, devices, cfg.telemetry_every, telemetry);
    let mut outcome = match synthetic_pass(spec, &base_url, &opts, phase).await {
        Err(e) => Err(e),
        Ok(baseline) => {
            *phase.lock().unwrap() = "benchmarking";
            bench::run_benchmark(spec, &base_url, opts).await.map(|r| (r, baseline))
        }
    };
    sampling.finish().await;
    if let (Ok((report, baseline)), Some((requested, s))) = (&mut outcome, &scrape) {
        let mut sd = s.finish(requested, report.target_info.engine_info.as_ref()).await;
        if let Some(b) = baseline.take() {
            sd.caveat = Some(bench_types::spec_decode::SYNTHETIC_CAVEAT.to_string());
            sd.synthetic = Some(b);
        }
        report.speculative = Some(sd);
    }
    let outcome = outcome.map(|(r, _)| r);
    match (outcome, engine) {
        (r, None) => r.map_err(Failure::from),
        (r, Some(mut p)) => {
            // An engine that died mid-run makes every later request fail; say so
            // instead of storing a result full of connection errors.
            let died = p.exited();
            p.stop(Duration::from_secs(10)).await;
            match (r, died) {
                (_, Some(status)) => {
                    Err(format!("the engine exited during the run ({status}); see its log").into())
                }
                (r, None) => r.map_err(Failure::from),
            }
        }
    }
}

/// Under synthetic acceptance (`NativeTarget::synthetic_acceptance`), the first of two
/// passes over the same prompts: each prompt's first sight, which the engine decodes
/// plainly and records (engine/src/spec/synthetic.rs). Its summary is the run's
/// speculation-off baseline; the measured pass follows on the same engine. None for every
/// other run.
async fn synthetic_pass(
    spec: &RunSpec,
    base_url: &str,
    opts: &RunOptions,
    phase: &Mutex<&'static str>,
) -> Result<Option<bench_types::spec_decode::SyntheticPass>, bench::BenchError> {
    let Target::Native(bench_types::NativeTarget { synthetic_acceptance: Some(requested), .. }) =
        &spec.target
    else {
        return Ok(None);
    };
    *phase.lock().unwrap() = "recording (synthetic acceptance, first pass)";
    let first = RunOptions {
        api_key: opts.api_key.clone(),
        progress: opts.progress.clone(),
        cancel: opts.cancel.clone(),
        before_measuring: None,
    };
    let report = bench::run_benchmark(spec, base_url, first).await?;
    Ok(Some(bench_types::spec_decode::SyntheticPass { requested: *requested, baseline: report.summary }))
}

/// How this host starts an engine: its environment (the host's pass-through list, the GPU
/// of this slot, then `extra`), its user and its home.
fn engine_launch<'a>(
    cfg: &'a WorkerConfig,
    slot: u32,
    program: &'a std::path::Path,
    args: &'a [String],
    extra: Vec<(String, String)>,
) -> Launch<'a> {
    let mut env = cfg.host.engine_env.clone();
    if cfg.slots > 1 {
        env.retain(|(k, _)| k != "CUDA_VISIBLE_DEVICES");
        env.push(("CUDA_VISIBLE_DEVICES".to_string(), slot.to_string()));
    }
    env.extend(extra);
    Launch { program, args, env, user: cfg.host.engine_user.as_ref(), home: &cfg.host.engine_home }
}

/// This slot's folder for an engine's generated config files, inside the engines' home and
/// owned by the engine user.
fn launch_dir(cfg: &WorkerConfig, slot: u32) -> Result<std::path::PathBuf, String> {
    let dir = cfg.host.engine_home.join("launch").join(format!("slot-{slot}"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    if let Some(u) = &cfg.host.engine_user {
        for d in [dir.parent().expect("launch/ has a parent"), &dir] {
            std::os::unix::fs::chown(d, Some(u.uid), Some(u.gid))
                .map_err(|e| format!("giving {} to {}: {e}", d.display(), u.name))?;
        }
    }
    Ok(dir)
}

/// A port nothing listens on right now (the engine binds it a moment later).
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
