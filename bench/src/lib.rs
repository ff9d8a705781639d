//! latlab-bench: a load generator with the semantics of `vllm bench serve`, usable as a
//! library (the web server's workers call `run_benchmark`) and as the `latlab-bench` CLI.
//!
//! Flow: `prepare` (tokenizer + dataset sample) -> `schedule` (arrival offsets from the
//! seed) -> `client` (one timed SSE stream per request) -> `finalize` (token counts, off
//! the timed path) -> `metrics::compute_summary` (one pure function, vLLM's definitions)
//! -> `report_text` / `save_result` / `BenchReport`.

pub mod assets;
pub mod client;
pub mod dataset;
pub mod dispatch;
pub mod error;
pub mod finalize;
pub mod input_file;
pub mod metrics;
pub mod mt19937;
pub mod np_gamma;
pub mod progress;
pub mod pyrandom;
pub mod report_text;
pub mod request_body;
pub mod runner;
pub mod save_result;
pub mod schedule;
pub mod sse;
pub mod stats;
pub mod target_info;
pub mod tokenizer;

pub use bench_types::{BenchReport, RequestRecord, RunSpec, Summary};
pub use dispatch::RequestOptions;
pub use error::BenchError;
pub use metrics::{SummaryOptions, compute_summary};
pub use progress::{Phase, Progress, ProgressTx};
pub use report_text::render_text;
pub use runner::{
    BeforeMeasuring, Prepared, RunOptions, prepare, run_benchmark, run_prepared, run_prepared_with,
    run_sweep, run_sweep_with,
};
pub use save_result::vllm_result_json;
pub use tokio_util::sync::CancellationToken;
