//! Runs one `RunSpec` against a base URL: prepares the prompts, fetches the target's
//! self-description, sends warm-up requests (excluded from everything), then releases the
//! measured requests on the drawn-up-front schedule through a FIFO concurrency limiter
//! (vLLM's semaphore), publishing progress and honouring cancellation. Token counting of
//! generated text happens after the last request, off the timed path.

use crate::client::{stream_request, StreamOutcome};
use crate::dataset::{self, Sample};
use crate::error::BenchError;
use crate::metrics::{compute_summary, SummaryOptions};
use crate::progress::{Phase, Progress, ProgressTx, Rolling};
use crate::request_body::build_body;
use crate::tokenizer::TokenCounter;
use bench_types::{BenchReport, RequestRecord, RunSpec};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

/// How a run reports back and can be stopped. `Default` = no key, no progress, no cancel.
#[derive(Default, Clone)]
pub struct RunOptions {
    /// Sent as `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// Receives the latest `Progress` (phase, counts, rolling TTFT/TPOT).
    pub progress: Option<ProgressTx>,
    /// Cancel it to abort in-flight requests; the run returns `BenchError::Cancelled`.
    pub cancel: CancellationToken,
}

/// A sampled dataset and the tokenizer that counted it; reusable across a sweep.
pub struct Prepared {
    pub tokenizer: Arc<TokenCounter>,
    pub sample: Sample,
}

/// Loads the tokenizer and samples the dataset. Blocking (file I/O, tokenization): call it
/// from `spawn_blocking` in async code, as `prepare_async` does. Stops soon after `cancel`.
pub fn prepare(spec: &RunSpec, cancel: &CancellationToken) -> Result<Prepared, BenchError> {
    let tokenizer = TokenCounter::for_spec(spec.tokenizer.as_deref())?;
    let sample = dataset::sample(&spec.dataset, spec.num_prompts as usize, spec.seed, &tokenizer, cancel)?;
    Ok(Prepared { tokenizer: Arc::new(tokenizer), sample })
}

/// `prepare` on a blocking thread; returns `Cancelled` as soon as `cancel` fires, whatever
/// the thread is doing (it notices at its next line or entry and stops).
pub async fn prepare_async(spec: &RunSpec, cancel: &CancellationToken) -> Result<Prepared, BenchError> {
    let (owned, token) = (spec.clone(), cancel.clone());
    let work = tokio::task::spawn_blocking(move || prepare(&owned, &token));
    tokio::select! {
        r = work => r.map_err(|e| BenchError::InvalidSpec(format!("dataset preparation panicked: {e}")))?,
        _ = cancel.cancelled() => Err(BenchError::Cancelled),
    }
}

/// Runs a spec with at most one concurrency value (see `RunSpec::expand`).
pub async fn run_benchmark(spec: &RunSpec, base_url: &str, opts: RunOptions) -> Result<BenchReport, BenchError> {
    check_spec(spec)?;
    let prepared = prepare_async(spec, &opts.cancel).await?;
    run_prepared(spec, &prepared, base_url, opts).await
}

/// Runs every value of a concurrency sweep in turn over one prepared sample; stops at the
/// first error (including cancellation) and returns the reports made so far with it.
pub async fn run_sweep(spec: &RunSpec, base_url: &str, opts: RunOptions) -> (Vec<BenchReport>, Option<BenchError>) {
    let prepared = match prepare_async(spec, &opts.cancel).await {
        Ok(p) => p,
        Err(e) => return (vec![], Some(e)),
    };
    let mut reports = Vec::new();
    for one in spec.expand() {
        match run_prepared(&one, &prepared, base_url, opts.clone()).await {
            Ok(r) => reports.push(r),
            Err(e) => return (reports, Some(e)),
        }
    }
    (reports, None)
}

fn check_spec(spec: &RunSpec) -> Result<(), BenchError> {
    spec.validate().map_err(|e| BenchError::InvalidSpec(e.to_string()))?;
    if spec.load.max_concurrency.len() > 1 {
        return Err(BenchError::InvalidSpec("a sweep: run each of RunSpec::expand() (or run_sweep)".into()));
    }
    Ok(())
}

/// Runs one spec over an already prepared sample.
pub async fn run_prepared(spec: &RunSpec, prepared: &Prepared, base_url: &str, opts: RunOptions) -> Result<BenchReport, BenchError> {
    check_spec(spec)?;
    let base = base_url.trim_end_matches('/');
    let url = format!("{base}{}", spec.backend.endpoint());
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
        .map_err(|e| BenchError::Http(e.to_string()))?;
    let reqs = &prepared.sample.requests;
    if reqs.is_empty() {
        return Err(BenchError::InvalidSpec("the dataset gave no prompts".into()));
    }
    let bodies: Arc<Vec<Vec<u8>>> = Arc::new(
        reqs.iter()
            .map(|r| serde_json::to_vec(&build_body(spec.backend, &spec.model, &r.prompt, r.output_len, &spec.sampling)).unwrap_or_default())
            .collect(),
    );
    let total = reqs.len() as u32;
    let publish = |p: Progress| {
        if let Some(tx) = &opts.progress {
            tx.send_replace(p);
        }
    };
    publish(Progress { phase: Phase::Preparing, total, ..Default::default() });
    let target_info = crate::target_info::fetch_target_info(&client, base, opts.api_key.as_deref()).await;
    let ctx = Arc::new(Ctx {
        client,
        url,
        api_key: opts.api_key.clone(),
        bodies,
        timeout: Duration::from_secs_f64(spec.request_timeout_s),
        limiter: Arc::new(Semaphore::new(spec.load.max_concurrency.first().map_or(Semaphore::MAX_PERMITS, |&c| c as usize))),
    });

    let mut notes = prepared.sample.notes.clone();
    if spec.warmup_requests > 0 {
        publish(Progress { phase: Phase::Warmup, total, ..Default::default() });
        let idx: Vec<usize> = (0..spec.warmup_requests as usize).map(|i| i % reqs.len()).collect();
        let (warm, cancelled) = dispatch_all(&ctx, &idx, &vec![0.0; idx.len()], Instant::now(), &opts.cancel, |_, _| {}).await;
        if cancelled {
            return Err(BenchError::Cancelled);
        }
        let bad = warm.iter().flatten().filter(|o| !o.success).count();
        notes.push(format!("{} warm-up requests sent first and excluded ({bad} failed)", spec.warmup_requests));
    }

    let offsets = crate::schedule::arrival_offsets(reqs.len(), spec.load.request_rate, spec.load.burstiness, spec.seed);
    let started_at = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
    let bench_start = Instant::now();
    let mut rolling = Rolling::default();
    let (mut ok, mut failed) = (0u32, 0u32);
    let idx: Vec<usize> = (0..reqs.len()).collect();
    let (outcomes, cancelled) = dispatch_all(&ctx, &idx, &offsets, bench_start, &opts.cancel, |_, o| {
        if o.success {
            ok += 1;
            let n = o.final_usage.unwrap_or(o.chunk_offsets_s.len() as u64);
            let (first, last) = (o.chunk_offsets_s[0], o.chunk_offsets_s[o.chunk_offsets_s.len() - 1]);
            rolling.push(first, (n > 1).then(|| (last - first) / (n - 1) as f64));
        } else {
            failed += 1;
        }
        let (t, p) = rolling.means_ms();
        publish(Progress {
            phase: Phase::Measuring,
            completed: ok,
            failed,
            total,
            elapsed_s: bench_start.elapsed().as_secs_f64(),
            rolling_ttft_ms: t,
            rolling_tpot_ms: p,
        });
    })
    .await;
    let duration_s = bench_start.elapsed().as_secs_f64();

    // Cancelled: the finished requests are kept (a partial result), the rest were never
    // measured to the end and are left out rather than counted as failures.
    let records: Vec<RequestRecord> = outcomes
        .into_iter()
        .enumerate()
        .filter_map(|(i, o)| o.map(|o| (i, o)))
        .map(|(i, o)| crate::finalize::record(i as u32, &o, bench_start, reqs[i].input_tokens, &prepared.tokenizer))
        .collect();
    if cancelled && records.is_empty() {
        return Err(BenchError::Cancelled);
    }
    let summary = compute_summary(&records, duration_s, &SummaryOptions::from_spec(spec));
    notes.extend(crate::finalize::run_notes(spec, &records));
    if cancelled {
        notes.push(format!(
            "partial: cancelled after {} of {total} requests had finished; requests still in flight are not counted",
            records.len()
        ));
    }
    publish(Progress {
        phase: Phase::Finished,
        completed: summary.completed,
        failed: summary.failed,
        total,
        elapsed_s: duration_s,
        rolling_ttft_ms: Some(summary.ttft.mean_ms),
        rolling_tpot_ms: Some(summary.tpot.mean_ms),
    });
    let report = BenchReport { spec: spec.clone(), target_info, started_at, summary, requests: records, notes };
    if cancelled {
        return Err(BenchError::CancelledPartway(Box::new(report)));
    }
    Ok(report)
}

struct Ctx {
    client: reqwest::Client,
    url: String,
    api_key: Option<String>,
    bodies: Arc<Vec<Vec<u8>>>,
    timeout: Duration,
    limiter: Arc<Semaphore>,
}

/// Releases request `idx[k]` at `start + offsets[k]`; each waits for a limiter permit
/// (FIFO), then streams. Calls `on_done` as each finishes; returns outcomes in `idx` order,
/// and whether `cancel` stopped it (then only the finished requests have an outcome).
async fn dispatch_all(
    ctx: &Arc<Ctx>,
    idx: &[usize],
    offsets: &[f64],
    start: Instant,
    cancel: &CancellationToken,
    mut on_done: impl FnMut(usize, &StreamOutcome),
) -> (Vec<Option<StreamOutcome>>, bool) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(usize, StreamOutcome)>();
    let jobs: Vec<(usize, f64)> = idx.iter().copied().zip(offsets.iter().copied()).collect();
    let ctx2 = Arc::clone(ctx);
    // The dispatcher owns every request task (JoinSet): aborting it aborts them all.
    let dispatcher = AbortOnDrop(tokio::spawn(async move {
        let mut set = tokio::task::JoinSet::new();
        for (k, (i, off)) in jobs.into_iter().enumerate() {
            if off > 0.0 {
                tokio::time::sleep_until((start + Duration::from_secs_f64(off)).into()).await;
            }
            // Permits are taken here, in dispatch order, so request k+1 never starts before
            // request k (asyncio's task order in vLLM); the task releases it when done.
            let Ok(permit) = Arc::clone(&ctx2.limiter).acquire_owned().await else { return };
            let (ctx, tx) = (Arc::clone(&ctx2), tx.clone());
            set.spawn(async move {
                let _permit = permit;
                let body = ctx.bodies[i].clone();
                let out = stream_request(&ctx.client, &ctx.url, ctx.api_key.as_deref(), body, ctx.timeout).await;
                let _ = tx.send((k, out));
            });
        }
        while set.join_next().await.is_some() {}
    }));
    let mut outcomes: Vec<Option<StreamOutcome>> = vec![None; idx.len()];
    let mut received = 0;
    while received < idx.len() {
        tokio::select! {
            _ = cancel.cancelled() => return (outcomes, true),
            msg = rx.recv() => match msg {
                Some((k, out)) => {
                    on_done(k, &out);
                    outcomes[k] = Some(out);
                    received += 1;
                }
                None => break,
            },
        }
    }
    drop(dispatcher);
    // A task that panicked leaves a hole: count it as a failed request, never drop it.
    let outcomes = outcomes
        .into_iter()
        .map(|o| Some(o.unwrap_or_else(|| StreamOutcome::failed_at(start, "request task ended without a result (panic?)"))))
        .collect();
    (outcomes, false)
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);
impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
