//! Bounds that keep a run from starting something absurd; each is far beyond any real
//! benchmark but small enough that a typo (an extra zero or three) is caught.

pub const MAX_NUM_PROMPTS: u32 = 100_000;
pub const MAX_CONCURRENCY: u32 = 4_096;
pub const MAX_SWEEP_VALUES: usize = 32;
pub const MAX_REQUEST_RATE: f64 = 100_000.0;
pub const MAX_TOKENS: u32 = 1_000_000;
pub const MAX_TIMEOUT_S: f64 = 86_400.0;
pub const MAX_WARMUP: u32 = 10_000;
pub const MAX_TEXT: usize = 512;
pub const MAX_MAX_BATCH: u32 = 1_024;
