//! Types shared by every half of latlab: the browser bundle (wasm32), the web server, the
//! database layer and the `latlab-bench` load generator. Only plain data and pure
//! validation live here, so the same `RunSpec::validate` runs in the browser and on the
//! server.

pub mod annotations;
pub mod api;
pub mod imported;
pub mod launched;
pub mod metrics;
pub mod native_ladder;
pub mod native_speculative;
pub mod rate_sweep;
pub mod report;
pub mod result_block;
pub mod run_list;
pub mod spec;
pub mod spec_decode;
pub mod stats;
pub mod status;
pub mod telemetry;
pub mod text;
pub mod validate;

pub use annotations::Annotations;
pub use api::{
    ComparisonRef, ComparisonSummary, ComparisonView, CreatedRuns, NewComparison, RunProgress, RunView,
};
pub use metrics::{METRICS, MetricInfo, MetricKind};
pub use report::{BenchReport, ChunkTokenSource, RequestRecord, Stats, Summary, TargetInfo};
pub use run_list::RunListQuery;
pub use spec::{
    Backend, Dataset, Device, Goodput, LoadProfile, NativeTarget, Quantization, RampUp, RampUpStrategy,
    RunSpec, Sampling, Target,
};
pub use spec_decode::SpecDecodeResult;
pub use status::RunStatus;
pub use validate::{FieldError, ValidationErrors};
