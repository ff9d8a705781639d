//! The target's own state while a run went, sampled about once a second beside the
//! client's numbers: its Prometheus `/metrics` under one name per quantity whichever
//! engine served it, and the worker's GPUs through NVML. Times are seconds since the
//! run's measured start, so they line up with a request timeline.

use serde::{Deserialize, Serialize};

/// One normalised series. The key (`as_str`) is what the database stores and what a
/// comparison's `series=` parameter names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Series {
    RunningRequests,
    WaitingRequests,
    KvCacheUsagePct,
    /// Tokens emitted per verify step over the last interval, the bonus token included.
    SpecAcceptLength,
    /// Generated tokens per second over the last interval, by the engine's own counter.
    GenerationTokensPerS,
    /// NVML's utilisation: the share of the last sample period in which a kernel ran.
    GpuUtilPct,
    GpuMemoryUsedMib,
    GpuPowerW,
    GpuSmClockMhz,
    GpuMemClockMhz,
    GpuTemperatureC,
}

impl Series {
    pub const ALL: [Series; 11] = [
        Series::RunningRequests,
        Series::WaitingRequests,
        Series::KvCacheUsagePct,
        Series::SpecAcceptLength,
        Series::GenerationTokensPerS,
        Series::GpuUtilPct,
        Series::GpuMemoryUsedMib,
        Series::GpuPowerW,
        Series::GpuSmClockMhz,
        Series::GpuMemClockMhz,
        Series::GpuTemperatureC,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Series::RunningRequests => "running_requests",
            Series::WaitingRequests => "waiting_requests",
            Series::KvCacheUsagePct => "kv_cache_usage_pct",
            Series::SpecAcceptLength => "spec_accept_length",
            Series::GenerationTokensPerS => "generation_tokens_per_s",
            Series::GpuUtilPct => "gpu_util_pct",
            Series::GpuMemoryUsedMib => "gpu_memory_used_mib",
            Series::GpuPowerW => "gpu_power_w",
            Series::GpuSmClockMhz => "gpu_sm_clock_mhz",
            Series::GpuMemClockMhz => "gpu_mem_clock_mhz",
            Series::GpuTemperatureC => "gpu_temperature_c",
        }
    }

    pub fn parse(key: &str) -> Option<Series> {
        Series::ALL.into_iter().find(|s| s.as_str() == key)
    }

    /// The axis label, unit included.
    pub fn label(self) -> &'static str {
        match self {
            Series::RunningRequests => "running requests",
            Series::WaitingRequests => "waiting requests",
            Series::KvCacheUsagePct => "KV cache usage (%)",
            Series::SpecAcceptLength => "accepted length (tokens / verify step)",
            Series::GenerationTokensPerS => "generation (tokens/s, engine counter)",
            Series::GpuUtilPct => "GPU busy (% of time a kernel ran)",
            Series::GpuMemoryUsedMib => "GPU memory used (MiB)",
            Series::GpuPowerW => "GPU power (W)",
            Series::GpuSmClockMhz => "GPU SM clock (MHz)",
            Series::GpuMemClockMhz => "GPU memory clock (MHz)",
            Series::GpuTemperatureC => "GPU temperature (°C)",
        }
    }

    /// Sampled per GPU through NVML, rather than read from the target's `/metrics`.
    pub fn is_gpu(self) -> bool {
        self.as_str().starts_with("gpu_")
    }
}

/// One sample: `gpu` is NVML's device index for GPU series, `None` for the target's own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TelemetryPoint {
    pub series: Series,
    pub gpu: Option<u32>,
    pub t_s: f64,
    pub value: f64,
}

/// A run's telemetry as pages read it. `collected` is false for runs from before it
/// existed (and imported ones); `notes` say what could not be sampled, and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunTelemetry {
    pub collected: bool,
    pub notes: Vec<String>,
    pub points: Vec<TelemetryPoint>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_parses_back_and_unknown_keys_do_not() {
        for s in Series::ALL {
            assert_eq!(Series::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert_eq!(Series::parse("vllm:num_requests_running"), None);
        assert!(Series::GpuPowerW.is_gpu() && !Series::KvCacheUsagePct.is_gpu());
    }
}
