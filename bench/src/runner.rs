//! Runs one `RunSpec` against a base URL: prepares the prompts, fetches the target's
//! self-description, optionally waits for the target to answer (the ready check), sends
//! warm-up requests (excluded from everything), then releases the measured requests on
//! the drawn-up-front schedule through a FIFO concurrency limiter (vLLM's semaphore),
//! publishing progress and honouring cancellation. Token counting of generated text
//! happens after the last request, off the timed path.

use crate::dataset::{self, Sample, SampleOptions};
use crate::dispatch::{Ctx, RequestOptions, dispatch_all, ready_check};
use crate::error::BenchError;
use crate::finalize::Finalized;
use crate::metrics::{SummaryOptions, compute_summary};
use crate::progress::{Phase, Progress, ProgressTx, Rolling};
use crate::request_body::build_body;
use crate::tokenizer::TokenCounter;
use bench_types::{BenchReport, RequestRecord, RunSpec, Summary};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
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
    /// Awaited once after the ready check and the warm-up, just before the measured
    /// requests go out: a caller snapshots the target's own counters there, so that their
    /// difference at the end covers the timed part only.
    pub before_measuring: Option<BeforeMeasuring>,
}

/// A hook `run_prepared` awaits before measuring (see `RunOptions::before_measuring`).
pub type BeforeMeasuring =
    Arc<dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + Sync>;

/// A sampled dataset and the tokenizer that counted it; reusable across a sweep.
pub struct Prepared {
    pub tokenizer: Arc<TokenCounter>,
    pub sample: Sample,
}

/// Loads the tokenizer and samples the dataset. Blocking (file I/O, tokenization): call it
/// from `spawn_blocking` in async code, as `prepare_async` does. Stops soon after `cancel`.
pub fn prepare(spec: &RunSpec, cancel: &CancellationToken) -> Result<Prepared, BenchError> {
    let tokenizer = TokenCounter::for_spec(spec.tokenizer.as_deref())?;
    let sample = dataset::sample_with(
        &spec.dataset,
        spec.num_prompts as usize,
        spec.seed,
        SampleOptions::from_spec(spec),
        &tokenizer,
        cancel,
    )?;
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
pub async fn run_benchmark(
    spec: &RunSpec,
    base_url: &str,
    opts: RunOptions,
) -> Result<BenchReport, BenchError> {
    check_spec(spec)?;
    let prepared = prepare_async(spec, &opts.cancel).await?;
    run_prepared(spec, &prepared, base_url, opts).await
}

/// Runs every value of a concurrency sweep in turn over one prepared sample; stops at the
/// first error (including cancellation) and returns the reports made so far with it.
pub async fn run_sweep(
    spec: &RunSpec,
    base_url: &str,
    opts: RunOptions,
) -> (Vec<BenchReport>, Option<BenchError>) {
    run_sweep_with(spec, base_url, opts, &RequestOptions::default()).await
}

/// `run_sweep` with request headers, request ids and a ready check.
pub async fn run_sweep_with(
    spec: &RunSpec,
    base_url: &str,
    opts: RunOptions,
    req: &RequestOptions,
) -> (Vec<BenchReport>, Option<BenchError>) {
    let prepared = match prepare_async(spec, &opts.cancel).await {
        Ok(p) => p,
        Err(e) => return (vec![], Some(e)),
    };
    let mut reports = Vec::new();
    for one in spec.expand() {
        match run_prepared_with(&one, &prepared, base_url, opts.clone(), req).await {
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
pub async fn run_prepared(
    spec: &RunSpec,
    prepared: &Prepared,
    base_url: &str,
    opts: RunOptions,
) -> Result<BenchReport, BenchError> {
    run_prepared_with(spec, prepared, base_url, opts, &RequestOptions::default()).await
}

/// `run_prepared` with request headers, request ids and a ready check.
pub async fn run_prepared_with(
    spec: &RunSpec,
    prepared: &Prepared,
    base_url: &str,
    opts: RunOptions,
    req: &RequestOptions,
) -> Result<BenchReport, BenchError> {
    check_spec(spec)?;
    let base = base_url.trim_end_matches('/');
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
        .map_err(|e| BenchError::Http(e.to_string()))?;
    let reqs = &prepared.sample.requests;
    if reqs.is_empty() {
        return Err(BenchError::InvalidSpec("the dataset gave no prompts".into()));
    }
    let mut sampling = spec.sampling.clone();
    sampling.ignore_eos = spec.sends_ignore_eos();
    let bodies: Arc<Vec<Vec<u8>>> = Arc::new(
        reqs.iter()
            .map(|r| {
                serde_json::to_vec(&build_body(spec.backend, &spec.model, &r.prompt, r.output_len, &sampling))
                    .unwrap_or_default()
            })
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
        url: format!("{base}{}", spec.backend.endpoint()),
        api_key: opts.api_key.clone(),
        bodies,
        timeout: Duration::from_secs_f64(spec.request_timeout_s),
        limiter: Arc::new(Semaphore::new(
            spec.load.max_concurrency.first().map_or(Semaphore::MAX_PERMITS, |&c| c as usize),
        )),
        req: req.clone(),
    });

    let mut notes = prepared.sample.notes.clone();
    if req.ready_check_timeout_s > 0.0 {
        if let Err(last) = ready_check(&ctx, req.ready_check_timeout_s, &opts.cancel).await {
            if opts.cancel.is_cancelled() {
                return Err(BenchError::Cancelled);
            }
            return Err(BenchError::NotReady {
                waited_s: req.ready_check_timeout_s,
                last_error: last.unwrap_or_else(|| "no answer".into()),
            });
        }
        notes.push("the target answered the first prompt before the run (ready check)".into());
    }
    if spec.warmup_requests > 0 {
        publish(Progress { phase: Phase::Warmup, total, ..Default::default() });
        // vLLM's warm-up: the first prompt, every time, under the concurrency cap.
        let idx = vec![0; spec.warmup_requests as usize];
        let (warm, cancelled) =
            dispatch_all(&ctx, &idx, &vec![0.0; idx.len()], Instant::now(), false, &opts.cancel, |_, _| {})
                .await;
        if cancelled {
            return Err(BenchError::Cancelled);
        }
        let bad = warm.iter().flatten().filter(|o| !o.success).count();
        notes.push(format!(
            "{} warm-up requests (the first prompt) sent first and excluded ({bad} failed)",
            spec.warmup_requests
        ));
    }

    if let Some(hook) = &opts.before_measuring {
        hook().await;
    }
    let offsets = crate::schedule::offsets_for(reqs.len(), spec);
    let started_at = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
    let bench_start = Instant::now();
    let mut rolling = Rolling::default();
    let (mut ok, mut failed) = (0u32, 0u32);
    let idx: Vec<usize> = (0..reqs.len()).collect();
    let (outcomes, cancelled) =
        dispatch_all(&ctx, &idx, &offsets, bench_start, true, &opts.cancel, |_, o| {
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
    let done: Vec<Finalized> = outcomes
        .into_iter()
        .enumerate()
        .filter_map(|(i, o)| o.map(|o| (i, o)))
        .map(|(i, o)| {
            crate::finalize::finalize(i as u32, &o, bench_start, reqs[i].input_tokens, &prepared.tokenizer)
        })
        .collect();
    if cancelled && done.is_empty() {
        return Err(BenchError::Cancelled);
    }
    let records: Vec<RequestRecord> = done.iter().map(|f| f.record.clone()).collect();
    let mut summary = compute_summary(&records, duration_s, &SummaryOptions::from_spec(spec));
    let succeeded = || done.iter().filter(|f| f.record.success);
    summary.server_input_tokens = succeeded().map(|f| f.server_prompt_tokens).sum();
    summary.token_itl_source = summary
        .token_itl
        .as_ref()
        .and_then(|_| crate::finalize::run_source(succeeded().map(|f| f.chunk_token_source)));
    notes.extend(crate::finalize::run_notes(spec, &records));
    notes.extend(count_notes(&summary));
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
    let report = BenchReport {
        spec: spec.clone(),
        target_info,
        started_at,
        summary,
        requests: records,
        notes,
        speculative: None,
    };
    if cancelled {
        return Err(BenchError::CancelledPartway(Box::new(report)));
    }
    Ok(report)
}

/// Which input count the result block prints, and where token ITL's counts came from.
fn count_notes(s: &Summary) -> Vec<String> {
    let server = match s.server_input_tokens {
        Some(n) => format!(
            "the server counted {n} (usage.prompt_tokens, chat template included), which current vLLM prints instead"
        ),
        None => "the server sent no usage.prompt_tokens for some requests, so its count is not known".into(),
    };
    let mut notes = vec![format!(
        "Total input tokens ({}) is the dataset's prompt lengths (the run's tokenizer on the raw prompts, no chat template), as vLLM v0.11 counted; {server}",
        s.total_input_tokens
    )];
    if let Some(src) = s.token_itl_source {
        notes.push(format!("token-level ITL: chunk token counts from {}", src.describe()));
    }
    notes
}
