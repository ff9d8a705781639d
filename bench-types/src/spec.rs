//! `RunSpec`: everything needed to run one benchmark, as the user asked for it. Stored as
//! JSONB beside the results it produced, so every number can be traced to its settings.
//!
//! Field names follow `vllm bench serve` where the concept is the same.

use serde::{Deserialize, Serialize};

/// What to benchmark, against what, with which load. Immutable once submitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// Free-text label shown in lists and charts; may be empty.
    #[serde(default)]
    pub label: String,
    pub target: Target,
    /// Model name sent in every request (`--model`).
    pub model: String,
    /// Tokenizer used to count tokens: a path to a HF `tokenizer.json` (or its folder), or
    /// `None` for the Qwen3 tokenizer that setup fetched (`--tokenizer`).
    #[serde(default)]
    pub tokenizer: Option<String>,
    #[serde(default)]
    pub backend: Backend,
    pub dataset: Dataset,
    /// `--num-prompts`: measured requests (warm-up requests come on top).
    pub num_prompts: u32,
    pub load: LoadProfile,
    #[serde(default)]
    pub sampling: Sampling,
    /// `--seed`: dataset shuffling and arrival times.
    #[serde(default)]
    pub seed: u64,
    /// Requests sent before measuring; excluded from every statistic.
    #[serde(default)]
    pub warmup_requests: u32,
    /// Per-request timeout in seconds; a request that exceeds it counts as failed.
    #[serde(default = "default_request_timeout_s")]
    pub request_timeout_s: f64,
    /// `--metric-percentiles`, e.g. `[50, 90, 99]`.
    #[serde(default = "default_percentiles")]
    pub percentiles: Vec<f64>,
    /// `--goodput` SLOs; a request counts as good when it meets every one given.
    #[serde(default)]
    pub goodput: Goodput,
    /// Wall-clock limit of the whole run in seconds (the worker's own limit caps it).
    #[serde(default)]
    pub time_limit_s: Option<f64>,
    /// `--ramp-up-strategy` with `--ramp-up-start-rps` / `--ramp-up-end-rps`: the request
    /// rate climbs from start to end over the run (`load.request_rate` stays empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_up: Option<RampUp>,
    /// `--disable-shuffle`: ShareGPT conversations in file order instead of shuffled by the seed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub disable_shuffle: bool,
    /// `--no-oversample`: when fewer prompts than `num_prompts` pass the dataset's filters,
    /// run only those instead of repeating some (vLLM's default) to reach the count.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_oversample: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

pub fn default_request_timeout_s() -> f64 {
    600.0
}

pub fn default_percentiles() -> Vec<f64> {
    vec![99.0]
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Target {
    /// Any OpenAI-compatible server that is already running.
    External {
        /// e.g. `http://127.0.0.1:8000` (no path: the backend adds `/v1/...`).
        base_url: String,
        /// Name of an environment variable (on the worker) holding the API key. The key
        /// itself is never stored or echoed.
        #[serde(default)]
        api_key_env: Option<String>,
    },
    /// latlab's own engine, started by the worker as a child process.
    Native(NativeTarget),
    /// vLLM, SGLang or TensorRT-LLM, started by the worker from typed options.
    Launched(crate::launched::LaunchedTarget),
    /// Numbers imported from elsewhere; never run by a worker.
    Imported(crate::imported::ImportedTarget),
}

/// Options for `latlab-engine`, rendered to its flags by the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NativeTarget {
    /// A Hugging Face checkpoint folder, or `random:<preset>` (e.g. `random:qwen3-8b`).
    pub model_source: String,
    #[serde(default)]
    pub device: Device,
    #[serde(default)]
    pub quantization: Quantization,
    /// Largest decode batch the engine plans for; `None` passes no `--max-batch`, so the
    /// engine takes its own default (64 on CUDA, its largest captured decode graph; 8 on
    /// the CPU). Specs stored with a number keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<u32>,
    #[serde(default = "default_true")]
    pub cuda_graphs: bool,
    /// EAGLE-3 speculative decoding, with SGLang's options (`native_speculative` checks
    /// them); `None` decodes one token per step. Absent in specs stored before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<crate::launched::Speculative>,
    /// Speed without real draft weights (`latlab-engine --speculative-synthetic-acceptance`,
    /// engine/src/spec/synthetic.rs): proposals from each prompt's recorded greedy
    /// continuation, made to accept this many tokens per round on average (the bonus
    /// included). The worker runs the workload twice on one engine: the first pass decodes
    /// plainly and records (kept as the speculation-off baseline), the second is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic_acceptance: Option<f64>,
}

fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Device {
    /// CUDA when a GPU is present, else CPU.
    #[default]
    Auto,
    Cpu,
    Cuda,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantization {
    /// Weights as stored (bf16 for most checkpoints).
    #[default]
    None,
    /// FP8 e4m3 weights with 128x128 block scales.
    Fp8,
}

/// `--backend`: which OpenAI endpoint is driven.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// `/v1/chat/completions`
    #[default]
    OpenaiChat,
    /// `/v1/completions`
    Openai,
}

impl Backend {
    pub fn endpoint(self) -> &'static str {
        match self {
            Backend::OpenaiChat => "/v1/chat/completions",
            Backend::Openai => "/v1/completions",
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::OpenaiChat => "openai-chat",
            Backend::Openai => "openai",
        }
    }
}

/// Where prompts come from (`--dataset-name`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Dataset {
    /// ShareGPT V3 with vLLM's sampling rules.
    Sharegpt {
        /// JSON file; `None` = the copy that setup fetched.
        #[serde(default)]
        path: Option<String>,
        /// `--sharegpt-output-len`: overrides every output length.
        #[serde(default)]
        output_len: Option<u32>,
    },
    /// Random token prompts (`--random-input-len`, `--random-output-len`, `--random-range-ratio`,
    /// `--random-prefix-len`). vLLM sends `ignore_eos` with this dataset whatever the flags
    /// say, and so does latlab (`RunSpec::sends_ignore_eos`).
    Random {
        input_len: u32,
        output_len: u32,
        #[serde(default)]
        range_ratio: f64,
        /// Random tokens put before every prompt, the same for all (a shared prefix the
        /// server can cache); `input_len` counts the part after it.
        #[serde(default, skip_serializing_if = "is_zero")]
        prefix_len: u32,
    },
    /// One JSON object per line: `{"prompt": "...", "output_len": N}`.
    Jsonl { path: String },
}

impl Dataset {
    pub fn name(&self) -> &'static str {
        match self {
            Dataset::Sharegpt { .. } => "sharegpt",
            Dataset::Random { .. } => "random",
            Dataset::Jsonl { .. } => "jsonl",
        }
    }
}

/// How requests are released.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadProfile {
    /// `--max-concurrency`. Several values make a sweep: one run per value (the seed
    /// study's BS=1/2/4/8). Empty: no cap.
    #[serde(default)]
    pub max_concurrency: Vec<u32>,
    /// `--request-rate` in requests/s; `None` is `inf` (all released at t=0).
    #[serde(default)]
    pub request_rate: Option<f64>,
    /// Several `--request-rate` values make a sweep: one run per value, each stored with
    /// its rate in `request_rate` and this list empty (`expand`), so a run's spec says the
    /// one rate it ran at. Written as numbers and `"inf"`. Absent in specs stored before it
    /// existed, and in every single run's spec.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "crate::rate_sweep::serde_rates")]
    pub request_rates: Vec<Option<f64>>,
    /// `--burstiness`: gamma shape of inter-arrival gaps (1 = Poisson).
    #[serde(default = "default_burstiness")]
    pub burstiness: f64,
}

fn default_burstiness() -> f64 {
    1.0
}

/// How the request rate climbs when ramping up: vLLM's `--ramp-up-*` flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RampUp {
    pub strategy: RampUpStrategy,
    /// Requests/s of the first request.
    pub start_rps: u32,
    /// Requests/s of the last request.
    pub end_rps: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RampUpStrategy {
    /// Request i of n asks for start + (end - start) * i / (n - 1) requests/s.
    Linear,
    /// Request i of n asks for start * (end / start) ^ (i / (n - 1)) requests/s.
    Exponential,
}

impl RampUpStrategy {
    pub fn as_str(self) -> &'static str {
        match self {
            RampUpStrategy::Linear => "linear",
            RampUpStrategy::Exponential => "exponential",
        }
    }
}

impl Default for LoadProfile {
    fn default() -> Self {
        LoadProfile { max_concurrency: vec![1], request_rate: None, request_rates: vec![], burstiness: 1.0 }
    }
}

/// Sampling settings sent with every request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    /// `--ignore-eos`: generate exactly the requested output length.
    #[serde(default)]
    pub ignore_eos: bool,
    /// `--temperature`; vLLM v0.11 sent 0 (greedy).
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Extra JSON merged into every request body (`--extra-body`); its keys win over the
    /// fields here, as in vLLM.
    #[serde(default)]
    pub extra_body: Option<serde_json::Value>,
    /// `--top-p`; sent only when set (the server's default otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// `--top-k` (-1 or 0: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    /// `--min-p`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f64>,
    /// `--frequency-penalty`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// `--presence-penalty`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// `--repetition-penalty`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition_penalty: Option<f64>,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            ignore_eos: false,
            temperature: Some(0.0),
            extra_body: None,
            top_p: None,
            top_k: None,
            min_p: None,
            frequency_penalty: None,
            presence_penalty: None,
            repetition_penalty: None,
        }
    }
}

impl Sampling {
    /// The sampling parameters that are set, by their request-body names, in vLLM's order.
    pub fn parameters(&self) -> Vec<(&'static str, serde_json::Value)> {
        use serde_json::json;
        [
            ("top_p", self.top_p.map(|v| json!(v))),
            ("top_k", self.top_k.map(|v| json!(v))),
            ("min_p", self.min_p.map(|v| json!(v))),
            ("temperature", self.temperature.map(|v| json!(v))),
            ("frequency_penalty", self.frequency_penalty.map(|v| json!(v))),
            ("presence_penalty", self.presence_penalty.map(|v| json!(v))),
            ("repetition_penalty", self.repetition_penalty.map(|v| json!(v))),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// `--goodput` service-level objectives, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Goodput {
    #[serde(default)]
    pub ttft_ms: Option<f64>,
    #[serde(default)]
    pub tpot_ms: Option<f64>,
    #[serde(default)]
    pub e2el_ms: Option<f64>,
}

impl Goodput {
    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_none() && self.tpot_ms.is_none() && self.e2el_ms.is_none()
    }
}

impl RunSpec {
    /// One spec per value of a sweep (concurrencies or request rates), each with exactly
    /// one value, or the spec itself when it sweeps nothing. A rate list of one value
    /// still becomes that run's `request_rate`.
    pub fn expand(&self) -> Vec<RunSpec> {
        if !self.load.request_rates.is_empty() {
            return self
                .load
                .request_rates
                .iter()
                .map(|&r| {
                    let mut s = self.clone();
                    s.load.request_rate = r;
                    s.load.request_rates.clear();
                    s
                })
                .collect();
        }
        if self.load.max_concurrency.len() <= 1 {
            return vec![self.clone()];
        }
        self.load
            .max_concurrency
            .iter()
            .map(|&c| {
                let mut s = self.clone();
                s.load.max_concurrency = vec![c];
                s
            })
            .collect()
    }

    /// Short description of the target for lists ("external http://...", "native random:tiny",
    /// "native random:qwen3-8b FP8", "native random:qwen3-8b FP8 + EAGLE-3").
    pub fn target_description(&self) -> String {
        match &self.target {
            Target::External { base_url, .. } => format!("external {base_url}"),
            Target::Native(n) => {
                let weights = match n.quantization {
                    Quantization::None => "",
                    Quantization::Fp8 => " FP8",
                };
                let spec = if n.speculative.is_some() { " + EAGLE-3" } else { "" };
                format!("native {}{weights}{spec}", n.model_source)
            }
            Target::Launched(l) => format!("{} {}", l.engine.as_str(), l.model),
            Target::Imported(i) => format!("imported {}", i.engine),
        }
    }

    /// "BS=4" / "rate=2.0/s" / "BS=1,2,4,8" / "BS=8 rate=1,2,inf/s" / "ramp=1-8/s" for lists
    /// and chart labels.
    pub fn load_label(&self) -> String {
        let c: Vec<String> = self.load.max_concurrency.iter().map(u32::to_string).collect();
        let rate = match (&self.ramp_up, self.load.request_rate) {
            (Some(r), _) => Some(format!("ramp={}-{}/s", r.start_rps, r.end_rps)),
            _ if !self.load.request_rates.is_empty() => Some(format!(
                "rate={}/s",
                crate::rate_sweep::format_rates(&self.load.request_rates).replace(' ', "")
            )),
            (None, Some(r)) => Some(format!("rate={r}/s")),
            (None, None) => None,
        };
        match (c.is_empty(), rate) {
            (true, None) => "rate=inf".to_string(),
            (true, Some(r)) => r,
            (false, None) => format!("BS={}", c.join(",")),
            (false, Some(r)) => format!("BS={} {r}", c.join(",")),
        }
    }

    /// Whether requests carry `ignore_eos`: when asked, and always with the random dataset
    /// (vLLM forces it there so every request runs to its drawn output length).
    pub fn sends_ignore_eos(&self) -> bool {
        self.sampling.ignore_eos || matches!(self.dataset, Dataset::Random { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn native(target: serde_json::Value) -> RunSpec {
        serde_json::from_value(json!({
            "target": target, "model": "tiny",
            "dataset": {"kind": "random", "input_len": 4, "output_len": 4}, "num_prompts": 1, "load": {}
        }))
        .unwrap()
    }

    fn max_batch(spec: &RunSpec) -> Option<u32> {
        let Target::Native(n) = &spec.target else { panic!("a native target") };
        n.max_batch
    }

    #[test]
    fn native_max_batch_absent_is_the_engines_default_and_a_stored_number_keeps_its_meaning() {
        let default = native(json!({"kind": "native", "model_source": "random:tiny"}));
        assert_eq!(max_batch(&default), None);
        assert!(serde_json::to_value(&default).unwrap()["target"].get("max_batch").is_none());
        assert!(default.validate().is_ok());

        let stored = native(json!({"kind": "native", "model_source": "random:tiny", "max_batch": 8}));
        assert_eq!(max_batch(&stored), Some(8));
        assert_eq!(serde_json::to_value(&stored).unwrap()["target"]["max_batch"], 8);

        let with = |b: u32| {
            native(json!({"kind": "native", "model_source": "random:tiny", "max_batch": b})).validate()
        };
        assert!(with(1).is_ok() && with(1024).is_ok());
        for bad in [0, 1025] {
            let e = with(bad).unwrap_err();
            assert_eq!(e.for_field("target.max_batch"), Some("must be between 1 and 1024"), "{bad}");
        }
    }
}
