//! The counters the engine thread publishes: /metrics reads them, `latlab-engine bench`
//! reads speculation's around each batch.

use std::sync::atomic::AtomicU64;

/// Live numbers the engine thread publishes for /metrics.
#[derive(Debug, Default)]
pub struct EngineStats {
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    pub kv_pages_used: AtomicU64,
    pub kv_pages_total: AtomicU64,
    pub steps: AtomicU64,
    pub prefill_tokens: AtomicU64,
    pub generated_tokens: AtomicU64,
    pub preemptions: AtomicU64,
    pub cancelled: AtomicU64,
    pub spec: SpecStats,
}

/// Speculative decoding's counters, cumulative over the engine's life (/metrics).
#[derive(Debug)]
pub struct SpecStats {
    /// Row-steps verified: one per speculating row per step.
    pub verify_steps: AtomicU64,
    /// Tokens those row-steps emitted, the bonus included (the stream may stop earlier).
    pub emitted_tokens: AtomicU64,
    /// `accept_length[n]`: row-steps that accepted n - 1 drafted tokens (n emitted, bonus
    /// included), for n up to `spec::MAX_STEPS + 1`.
    pub accept_length: Vec<AtomicU64>,
    /// Per draft depth d (index d - 1): row-steps whose tree reached depth d, and those
    /// that accepted a token at depth d.
    pub proposed_at: Vec<AtomicU64>,
    pub accepted_at: Vec<AtomicU64>,
    /// Wall time of the draft's calls (one per step that drafts, for all its rows) and how
    /// many there were; the same for the target's verify calls. `latlab-engine bench`
    /// reports a round's cost as their ratio.
    pub draft_nanos: AtomicU64,
    pub draft_calls: AtomicU64,
    pub verify_nanos: AtomicU64,
    pub verify_calls: AtomicU64,
}

impl Default for SpecStats {
    fn default() -> Self {
        let zeros = |n| (0..n).map(|_| AtomicU64::new(0)).collect();
        SpecStats {
            verify_steps: AtomicU64::new(0),
            emitted_tokens: AtomicU64::new(0),
            accept_length: zeros(crate::spec::MAX_STEPS + 2),
            proposed_at: zeros(crate::spec::MAX_STEPS),
            accepted_at: zeros(crate::spec::MAX_STEPS),
            draft_nanos: AtomicU64::new(0),
            draft_calls: AtomicU64::new(0),
            verify_nanos: AtomicU64::new(0),
            verify_calls: AtomicU64::new(0),
        }
    }
}
