//! `BenchReport`: what one benchmark run produced — every request's timings, the summary
//! computed from them (vLLM's definitions, see `bench::metrics`), the spec that asked for
//! it and the target's own description of itself.

use crate::spec::RunSpec;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub spec: RunSpec,
    /// What the target said about itself (`/v1/models`, `/v1/engine/info`).
    pub target_info: TargetInfo,
    /// Wall-clock time of the first dispatch.
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub summary: Summary,
    /// Measured requests only (warm-up excluded), in dispatch order.
    pub requests: Vec<RequestRecord>,
    /// Free-form notes about the data, e.g. "ShareGPT: kept 17,671 entries (file cut off)".
    #[serde(default)]
    pub notes: Vec<String>,
    /// What a speculating engine reported about the measured part (native targets with
    /// `speculative`); the load generator leaves it empty, the worker fills it in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<crate::spec_decode::SpecDecodeResult>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// Body of `GET /v1/models`, when it answered.
    #[serde(default)]
    pub models: Option<serde_json::Value>,
    /// Body of `GET /v1/engine/info` (latlab's engine), when present.
    #[serde(default)]
    pub engine_info: Option<serde_json::Value>,
}

/// One request as the client saw it. Times are seconds on the client's monotonic clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Position in the dataset sample.
    pub index: u32,
    /// Start of the request (just before the POST) relative to the first dispatch.
    pub dispatch_offset_s: f64,
    pub success: bool,
    #[serde(default)]
    pub error: Option<String>,
    pub input_tokens: u32,
    /// `usage.completion_tokens`, or re-tokenized text when no usage came.
    pub output_tokens: u32,
    /// Time to the first event with non-empty `choices`.
    #[serde(default)]
    pub ttft_s: Option<f64>,
    /// Time to the last event with non-empty `choices`.
    #[serde(default)]
    pub e2el_s: Option<f64>,
    /// Offsets from the request start of every `choices` event (chunk, not token).
    #[serde(default)]
    pub chunk_offsets_s: Vec<f64>,
    /// Tokens each chunk carried, when known (per-chunk usage or re-tokenization); same
    /// length as `chunk_offsets_s`. Lets token-level ITL be computed for speculative
    /// decoding, where one event carries several tokens.
    #[serde(default)]
    pub chunk_tokens: Option<Vec<u32>>,
}

/// Mean / median / std / percentiles of one latency metric, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub mean_ms: f64,
    pub median_ms: f64,
    pub std_ms: f64,
    /// `(p, value_ms)` for each requested percentile, e.g. `(99.0, 12.3)`.
    pub percentiles: Vec<(f64, f64)>,
}

impl Stats {
    pub fn percentile(&self, p: f64) -> Option<f64> {
        self.percentiles.iter().find(|(q, _)| (*q - p).abs() < 1e-9).map(|(_, v)| *v)
    }
}

/// The numbers of vLLM's "Serving Benchmark Result" block, plus latlab's additions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub completed: u32,
    pub failed: u32,
    /// Concurrency cap of this run (`None` = no cap).
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    /// Requests/s asked for (`None` = inf).
    #[serde(default)]
    pub request_rate: Option<f64>,
    pub duration_s: f64,
    /// The dataset's prompt lengths (the run's tokenizer on the raw prompt, no chat
    /// template), summed over successful requests: what vLLM v0.11, the seed study's
    /// version, prints as "Total input tokens", and what latlab prints there.
    pub total_input_tokens: u64,
    /// The server's `usage.prompt_tokens` summed over successful requests (chat template
    /// included): what current vLLM prints as "Total input tokens". `None` when a
    /// successful request's stream carried no prompt count.
    #[serde(default)]
    pub server_input_tokens: Option<u64>,
    pub total_output_tokens: u64,
    pub request_throughput: f64,
    /// Requests/s meeting every goodput SLO, when SLOs were given.
    #[serde(default)]
    pub goodput: Option<f64>,
    pub output_throughput: f64,
    pub total_token_throughput: f64,
    /// Max over 1-second buckets of output tokens (chunk-counted, as vLLM does).
    pub peak_output_throughput: f64,
    /// Exact peak of in-flight requests over [start, end) intervals (not vLLM v0.11's
    /// per-second buckets, which over-count).
    pub peak_concurrent_requests: u32,
    pub ttft: Stats,
    pub tpot: Stats,
    /// Chunk-level inter-token latency (vLLM's ITL: gaps between SSE events).
    pub itl: Stats,
    pub e2el: Stats,
    /// Token-level ITL (gap / tokens in the chunk), when chunk token counts are known.
    #[serde(default)]
    pub token_itl: Option<Stats>,
    /// Where the chunk token counts behind `token_itl` came from. `None`: no token ITL,
    /// or a report from before the source was recorded.
    #[serde(default)]
    pub token_itl_source: Option<ChunkTokenSource>,
}

/// How many tokens each streamed chunk carried, by whose count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkTokenSource {
    /// The server's cumulative `usage.completion_tokens` on every chunk
    /// (`stream_options.continuous_usage_stats`, as vLLM serves it).
    ServerUsage,
    /// The run's tokenizer over the whole streamed text, each chunk credited with the
    /// tokens that end inside it (the difference of prefix counts).
    Tokenization,
    /// Some requests had the server's counts, the others were tokenized.
    Mixed,
}

impl ChunkTokenSource {
    pub fn describe(self) -> &'static str {
        match self {
            ChunkTokenSource::ServerUsage => "the server's per-chunk usage (continuous_usage_stats)",
            ChunkTokenSource::Tokenization => {
                "cumulative tokenization of the streamed text (no per-chunk usage from the server)"
            }
            ChunkTokenSource::Mixed => {
                "the server's per-chunk usage where sent, else cumulative tokenization of the streamed text"
            }
        }
    }
}
