//! Live progress of a run, published on a `tokio::sync::watch` channel so the web UI (or
//! the terminal bar) reads the latest state whenever it likes without slowing the run.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    #[default]
    Preparing,
    Warmup,
    Measuring,
    Finished,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub phase: Phase,
    /// Measured requests finished successfully / with an error, out of `total`.
    pub completed: u32,
    pub failed: u32,
    pub total: u32,
    /// Seconds since the first measured dispatch.
    pub elapsed_s: f64,
    /// Mean TTFT / TPOT (ms) over the last `ROLLING` successful requests.
    pub rolling_ttft_ms: Option<f64>,
    pub rolling_tpot_ms: Option<f64>,
}

/// Window of the rolling means.
pub const ROLLING: usize = 32;

pub type ProgressTx = tokio::sync::watch::Sender<Progress>;

/// Rolling means over the last `ROLLING` values.
#[derive(Default)]
pub(crate) struct Rolling {
    ttft: std::collections::VecDeque<f64>,
    tpot: std::collections::VecDeque<f64>,
}

impl Rolling {
    pub(crate) fn push(&mut self, ttft_s: f64, tpot_s: Option<f64>) {
        push_capped(&mut self.ttft, ttft_s);
        if let Some(t) = tpot_s {
            push_capped(&mut self.tpot, t);
        }
    }
    pub(crate) fn means_ms(&self) -> (Option<f64>, Option<f64>) {
        (mean_ms(&self.ttft), mean_ms(&self.tpot))
    }
}

fn push_capped(q: &mut std::collections::VecDeque<f64>, v: f64) {
    if q.len() == ROLLING {
        q.pop_front();
    }
    q.push_back(v);
}

fn mean_ms(q: &std::collections::VecDeque<f64>) -> Option<f64> {
    (!q.is_empty()).then(|| q.iter().sum::<f64>() / q.len() as f64 * 1000.0)
}
