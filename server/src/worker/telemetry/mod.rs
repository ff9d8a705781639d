//! What the target and the GPUs said about themselves while a run went, sampled on a task
//! of its own beside the benchmark: the target's `/metrics` (normalised, metrics_text.rs)
//! and, for engines this worker started, NVML (gpus.rs). One scrape at a time, each with a
//! short timeout, and ticks missed while one is slow are skipped, so sampling never piles
//! requests onto the server being measured. Samples go to the database in batches while
//! the run goes (batches.rs). Whatever cannot be sampled becomes a note on the run, never
//! a failure.

mod batches;
mod gpus;
pub mod metrics_text;

pub use batches::Sink;
pub use gpus::Devices;

use batches::Batches;
use bench::CancellationToken;
use db::telemetry::NewSample;
use gpus::Gpus;
use metrics_text::Normaliser;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A bound on what one run stores (a day at one sample a second of every series of one
/// GPU is about 600,000).
const MAX_SAMPLES: usize = 1_000_000;

/// Sampling in progress; `finish` stops it and stores the last batch and the notes.
pub struct Sampling {
    stop: CancellationToken,
    sink: Sink,
    task: tokio::task::JoinHandle<()>,
}

/// Starts sampling `base_url`'s `/metrics` every `every`, and the GPUs when `gpus` says
/// which (`None`: the target is not an engine this worker started, so this host's GPUs
/// say nothing about it), storing the samples into `sink` as it goes.
pub fn start(base_url: &str, gpus: Option<Devices>, every: Duration, sink: Sink) -> Sampling {
    let stop = CancellationToken::new();
    let url = format!("{}/metrics", base_url.trim_end_matches('/'));
    let task = tokio::spawn(sample_loop(url, gpus, every, sink.clone(), stop.clone()));
    Sampling { stop, sink, task }
}

impl Sampling {
    pub async fn finish(self) {
        self.stop.cancel();
        if let Err(e) = self.task.await {
            let note = format!("telemetry stopped unexpectedly: {e}");
            if let Err(e) = db::telemetry::set_notes(&self.sink.pool, self.sink.run_id, &[note]).await {
                tracing::warn!(run_id = self.sink.run_id, error = %e, "storing the run's telemetry notes");
            }
        }
    }
}

/// The target's side: scraping stops at the first failure if no scrape ever worked
/// (a target without `/metrics` is asked once, not every second).
struct Scraper {
    client: reqwest::Client,
    url: String,
    normaliser: Normaliser,
    on: bool,
    ok: u32,
    known: u32,
    failed: u32,
    last_error: Option<String>,
    notes: Vec<String>,
}

impl Scraper {
    async fn sample(&mut self, t_s: f64) -> Vec<(bench_types::telemetry::Series, f64)> {
        if !self.on {
            return Vec::new();
        }
        let values = super::prometheus_text::fetch(&self.client, &self.url)
            .await
            .and_then(|text| metrics_text::parse(&text).map_err(|e| format!("{}: {e}", self.url)));
        match values {
            Ok(v) => {
                self.ok += 1;
                let s = self.normaliser.sample(&v, t_s);
                self.known += u32::from(!s.is_empty());
                s
            }
            Err(e) if self.ok == 0 => {
                self.notes.push(format!("no server-side series: {e}"));
                self.on = false;
                Vec::new()
            }
            Err(e) => {
                self.failed += 1;
                self.last_error = Some(e);
                Vec::new()
            }
        }
    }

    fn into_notes(mut self) -> Vec<String> {
        if self.ok > 0 && self.known == 0 {
            self.notes.push(format!(
                "{} has none of the series latlab reads (vLLM's, SGLang's or latlab-engine's names)",
                self.url
            ));
        }
        if let Some(e) = self.last_error {
            self.notes.push(format!(
                "{} of {} scrapes failed; the last: {e}",
                self.failed,
                self.failed + self.ok
            ));
        }
        self.notes
    }
}

async fn open_gpus(devices: Option<Devices>, notes: &mut Vec<String>) -> Option<Arc<Gpus>> {
    let Some(devices) = devices else {
        notes.push("GPUs not sampled: they are sampled only for engines this worker starts".into());
        return None;
    };
    match tokio::task::spawn_blocking(move || Gpus::open(&devices)).await {
        Ok(Ok(g)) => Some(Arc::new(g)),
        Ok(Err(e)) => {
            notes.push(format!("no GPU series: {e}"));
            None
        }
        Err(e) => {
            notes.push(format!("no GPU series: loading NVML failed ({e})"));
            None
        }
    }
}

async fn sample_loop(
    url: String,
    devices: Option<Devices>,
    every: Duration,
    sink: Sink,
    stop: CancellationToken,
) {
    let timeout = every.clamp(Duration::from_millis(500), Duration::from_secs(2));
    let client = reqwest::Client::builder().timeout(timeout).build().unwrap_or_default();
    let mut batches = Batches::open(sink).await;
    let mut notes = Vec::new();
    let gpus = open_gpus(devices, &mut notes).await;
    let mut scraper = Scraper {
        client,
        url,
        normaliser: Normaliser::default(),
        on: true,
        ok: 0,
        known: 0,
        failed: 0,
        last_error: None,
        notes: Vec::new(),
    };
    let started = Instant::now();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => break,
        }
        let at = chrono::Utc::now();
        let mut samples: Vec<NewSample> = scraper
            .sample(started.elapsed().as_secs_f64())
            .await
            .into_iter()
            .map(|(series, value)| NewSample { series, gpu: None, at, value })
            .collect();
        if let Some(g) = &gpus {
            let g = g.clone();
            let at = chrono::Utc::now();
            for (i, series, value) in
                tokio::task::spawn_blocking(move || g.sample()).await.unwrap_or_default()
            {
                samples.push(NewSample { series, gpu: Some(i), at, value });
            }
        }
        batches.push(samples).await;
        if batches.taken() >= MAX_SAMPLES {
            notes.push(format!("sampling stopped after {MAX_SAMPLES} samples"));
            break;
        }
    }
    let mut all = scraper.into_notes();
    all.append(&mut notes);
    batches.close(all).await;
}
