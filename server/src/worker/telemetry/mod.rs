//! What the target and the GPUs said about themselves while a run went, sampled on a task
//! of its own beside the benchmark: the target's `/metrics` (normalised, metrics_text.rs)
//! and, for engines this worker started, NVML (gpus.rs). One scrape at a time, each with a
//! short timeout, and ticks missed while one is slow are skipped, so sampling never piles
//! requests onto the server being measured. Whatever cannot be sampled becomes a note on
//! the run, never a failure.

mod gpus;
pub mod metrics_text;

pub use gpus::Devices;

use bench::CancellationToken;
use db::telemetry::NewSample;
use gpus::Gpus;
use metrics_text::Normaliser;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A bound on what one run keeps in memory (a day at one sample a second of every series
/// of one GPU is about 600,000).
const MAX_SAMPLES: usize = 1_000_000;

/// What a run's sampling collected, to store with the run.
#[derive(Debug, Default)]
pub struct Collected {
    pub samples: Vec<NewSample>,
    pub notes: Vec<String>,
}

/// Sampling in progress; `finish` stops it and hands over what it collected.
pub struct Sampling {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Collected>,
}

/// Starts sampling `base_url`'s `/metrics` every `every`, and the GPUs when `gpus` says
/// which (`None`: the target is not an engine this worker started, so this host's GPUs
/// say nothing about it).
pub fn start(base_url: &str, gpus: Option<Devices>, every: Duration) -> Sampling {
    let stop = CancellationToken::new();
    let url = format!("{}/metrics", base_url.trim_end_matches('/'));
    let task = tokio::spawn(sample_loop(url, gpus, every, stop.clone()));
    Sampling { stop, task }
}

impl Sampling {
    pub async fn finish(self) -> Collected {
        self.stop.cancel();
        self.task.await.unwrap_or_else(|e| Collected {
            samples: Vec::new(),
            notes: vec![format!("telemetry stopped unexpectedly: {e}")],
        })
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
    stop: CancellationToken,
) -> Collected {
    let timeout = every.clamp(Duration::from_millis(500), Duration::from_secs(2));
    let client = reqwest::Client::builder().timeout(timeout).build().unwrap_or_default();
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
    let mut samples = Vec::new();
    let started = Instant::now();
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => break,
        }
        let at = chrono::Utc::now();
        for (series, value) in scraper.sample(started.elapsed().as_secs_f64()).await {
            samples.push(NewSample { series, gpu: None, at, value });
        }
        if let Some(g) = &gpus {
            let g = g.clone();
            let at = chrono::Utc::now();
            for (i, series, value) in
                tokio::task::spawn_blocking(move || g.sample()).await.unwrap_or_default()
            {
                samples.push(NewSample { series, gpu: Some(i), at, value });
            }
        }
        if samples.len() >= MAX_SAMPLES {
            notes.push(format!("sampling stopped after {MAX_SAMPLES} samples"));
            break;
        }
    }
    let mut all = scraper.into_notes();
    all.append(&mut notes);
    Collected { samples, notes: all }
}
