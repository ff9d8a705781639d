//! A run's samples on their way to Postgres: held only until the next flush (every
//! `Sink::every`, or sooner when a batch fills), so memory holds one batch rather than the
//! whole run, and a worker that dies mid-run leaves what it had flushed.

use db::telemetry::NewSample;
use sqlx::PgPool;
use std::time::{Duration, Instant};

/// A batch this large is written without waiting for the interval (a host with many GPUs).
const BATCH: usize = 5_000;

/// Unflushed samples kept while the database refuses them; past this, they are dropped
/// (and counted in a note) rather than growing without bound.
const MAX_UNFLUSHED: usize = 100_000;

/// Where a run's samples go, and how often.
#[derive(Debug, Clone)]
pub struct Sink {
    pub pool: PgPool,
    pub run_id: i64,
    pub every: Duration,
}

/// The samples taken since the last flush.
pub(super) struct Batches {
    sink: Sink,
    buffer: Vec<NewSample>,
    flushed_at: Instant,
    stored: usize,
    lost: usize,
    last_error: Option<String>,
}

impl Batches {
    /// Starts the run's telemetry afresh in the database (`db::telemetry::begin`).
    pub(super) async fn open(sink: Sink) -> Batches {
        let last_error = db::telemetry::begin(&sink.pool, sink.run_id).await.err().map(|e| e.to_string());
        Batches { sink, buffer: Vec::new(), flushed_at: Instant::now(), stored: 0, lost: 0, last_error }
    }

    /// Samples taken so far, stored or not.
    pub(super) fn taken(&self) -> usize {
        self.stored + self.lost + self.buffer.len()
    }

    pub(super) async fn push(&mut self, samples: impl IntoIterator<Item = NewSample>) {
        self.buffer.extend(samples);
        if self.buffer.len() >= BATCH || self.flushed_at.elapsed() >= self.sink.every {
            self.flush().await;
        }
    }

    async fn flush(&mut self) {
        self.flushed_at = Instant::now();
        if self.buffer.is_empty() {
            return;
        }
        match db::telemetry::append(&self.sink.pool, self.sink.run_id, &self.buffer).await {
            Ok(()) => {
                self.stored += self.buffer.len();
                self.buffer.clear();
            }
            Err(e) => {
                tracing::warn!(run_id = self.sink.run_id, error = %e, "storing telemetry samples; retrying at the next flush");
                self.last_error = Some(e.to_string());
                if self.buffer.len() > MAX_UNFLUSHED {
                    self.lost += self.buffer.len();
                    self.buffer.clear();
                }
            }
        }
    }

    /// The last flush, then the notes (what could not be sampled or stored).
    pub(super) async fn close(mut self, mut notes: Vec<String>) {
        self.flush().await;
        self.lost += self.buffer.len();
        if let Some(e) = &self.last_error
            && self.lost > 0
        {
            notes.push(format!("{} samples could not be stored; the database said: {e}", self.lost));
        }
        if let Err(e) = db::telemetry::set_notes(&self.sink.pool, self.sink.run_id, &notes).await {
            tracing::warn!(run_id = self.sink.run_id, error = %e, "storing the run's telemetry notes");
        }
    }
}
