//! Sending requests: the FIFO concurrency limiter and arrival schedule of a run (vLLM's
//! semaphore and `get_request`), and the ready check (`--ready-check-timeout-sec`) that
//! may come before it. Every request carries the same headers (`--header`, the API key)
//! plus, when asked, `x-request-id` = prefix + its index in the sample.

use crate::client::{StreamOutcome, request_headers, stream_request_with};
use reqwest::header::{HeaderName, HeaderValue};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

/// Request settings that shape no number, so they stay out of the `RunSpec` (headers may
/// carry secrets, as vLLM's `--header` does; the spec is stored and shown).
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    /// `--header KEY=VALUE`: sent with every request, over the content type and key.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// `--request-id-prefix`: measured request i carries `x-request-id: <prefix><i>`.
    pub request_id_prefix: Option<String>,
    /// `--ready-check-timeout-sec`: before anything else, send the first prompt until it
    /// succeeds or this many seconds pass (then the run fails); 0 skips the check.
    pub ready_check_timeout_s: f64,
}

pub(crate) struct Ctx {
    pub client: reqwest::Client,
    pub url: String,
    pub api_key: Option<String>,
    pub bodies: Arc<Vec<Vec<u8>>>,
    pub timeout: Duration,
    pub limiter: Arc<Semaphore>,
    pub req: RequestOptions,
}

impl Ctx {
    async fn send(&self, i: usize, request_id: Option<String>) -> StreamOutcome {
        let headers = request_headers(self.api_key.as_deref(), &self.req.headers, request_id.as_deref());
        stream_request_with(&self.client, &self.url, headers, self.bodies[i].clone(), self.timeout).await
    }
}

/// vLLM's `wait_for_endpoint`: the first prompt, again every 5 s after a failure, until
/// one succeeds (`Ok`) or the timeout passes (`Err` with the last error).
pub(crate) async fn ready_check(
    ctx: &Ctx,
    timeout_s: f64,
    cancel: &CancellationToken,
) -> Result<(), Option<String>> {
    let deadline = Instant::now() + Duration::from_secs_f64(timeout_s);
    let mut last = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(last);
        }
        tokio::select! {
            _ = cancel.cancelled() => return Err(Some("cancelled".into())),
            out = tokio::time::timeout(left, ctx.send(0, None)) => match out {
                Ok(o) if o.success => return Ok(()),
                Ok(o) => last = o.error,
                Err(_) => return Err(last),
            },
        }
        let pause = Duration::from_secs(5).min(deadline.saturating_duration_since(Instant::now()));
        tokio::select! {
            _ = cancel.cancelled() => return Err(Some("cancelled".into())),
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// Releases request `idx[k]` at `start + offsets[k]`; each waits for a limiter permit
/// (FIFO), then streams. Calls `on_done` as each finishes; returns outcomes in `idx` order,
/// and whether `cancel` stopped it (then only the finished requests have an outcome).
/// `ids`: whether requests carry `x-request-id` (measured ones do, warm-ups do not).
pub(crate) async fn dispatch_all(
    ctx: &Arc<Ctx>,
    idx: &[usize],
    offsets: &[f64],
    start: Instant,
    ids: bool,
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
            let id = ids.then(|| ctx.req.request_id_prefix.as_ref().map(|p| format!("{p}{i}"))).flatten();
            set.spawn(async move {
                let _permit = permit;
                let out = ctx.send(i, id).await;
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
        .map(|o| {
            Some(o.unwrap_or_else(|| {
                StreamOutcome::failed_at(start, "request task ended without a result (panic?)")
            }))
        })
        .collect();
    (outcomes, false)
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);
impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
