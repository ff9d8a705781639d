//! The new-run form as the browser sends it (every field a string, as typed) and its
//! translation to a `RunSpec`. Parsing errors and `RunSpec::validate` errors come back
//! under the spec's field paths, so each message lands beside its input, in the browser
//! while typing and on the server after submitting.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunForm {
    #[serde(default)]
    pub label: String,
    /// `external` or `native`
    pub target_kind: String,
    #[serde(default)]
    pub base_url: String,
    #[serde(default)]
    pub api_key_env: String,
    #[serde(default)]
    pub model_source: String,
    #[serde(default)]
    pub device: String,
    /// Empty takes the engine's default (64 on CUDA, 8 on the CPU).
    #[serde(default)]
    pub max_batch: String,
    /// Native engine weights: `none` (as stored) or `fp8` (quantized at load). Absent
    /// (an older client) means `none`.
    #[serde(default)]
    pub quantization: String,
    /// Native engine, a checkbox: EAGLE-3 speculative decoding with the fields below.
    #[serde(default)]
    pub speculative: Option<String>,
    /// The EAGLE-3 draft; empty takes `random:<preset>-eagle3` for a random model source.
    #[serde(default)]
    pub draft_model: String,
    /// Empty numbers take the engine's defaults (a chain: 3 steps, topk 1, 4 draft tokens).
    #[serde(default)]
    pub spec_num_steps: String,
    #[serde(default)]
    pub spec_topk: String,
    #[serde(default)]
    pub spec_num_draft_tokens: String,
    /// `target.synthetic_acceptance`: tokens per round, empty for the draft's own proposals.
    #[serde(default)]
    pub spec_synthetic: String,
    /// Native engine, a checkbox: the native ladder (bf16, FP8, FP8 + EAGLE-3 tree, FP8 +
    /// EAGLE-3 chain), one run per rung, as one comparison.
    #[serde(default)]
    pub native_ladder: Option<String>,
    /// Launched engines: comma-separated preset names (see `launched::seed_presets`); one
    /// run per preset (and per concurrency value).
    #[serde(default)]
    pub presets: String,
    pub model: String,
    #[serde(default)]
    pub tokenizer: String,
    #[serde(default)]
    pub backend: String,
    /// `sharegpt`, `random` or `jsonl`
    pub dataset_kind: String,
    #[serde(default)]
    pub dataset_path: String,
    #[serde(default)]
    pub input_len: String,
    #[serde(default)]
    pub output_len: String,
    pub num_prompts: String,
    /// Comma-separated list, e.g. `1,2,4,8`: one run per value.
    #[serde(default)]
    pub max_concurrency: String,
    /// Requests/s: one value, or a comma-separated list that sweeps (one run per value,
    /// `inf` allowed); empty means `inf`.
    #[serde(default)]
    pub request_rate: String,
    /// `poisson` or `gamma` (with the burstiness); empty (an older client) takes the
    /// burstiness as given.
    #[serde(default)]
    pub arrival: String,
    #[serde(default)]
    pub burstiness: String,
    /// `--metric-percentiles`, comma-separated; empty is 99.
    #[serde(default)]
    pub percentiles: String,
    /// `--goodput` SLOs in milliseconds; empty sets none for that metric.
    #[serde(default)]
    pub goodput_ttft_ms: String,
    #[serde(default)]
    pub goodput_tpot_ms: String,
    #[serde(default)]
    pub goodput_e2el_ms: String,
    #[serde(default)]
    pub seed: String,
    /// A checkbox: present ("on") when ticked, absent otherwise.
    #[serde(default)]
    pub ignore_eos: Option<String>,
    #[serde(default)]
    pub temperature: String,
    #[serde(default)]
    pub warmup_requests: String,
    #[serde(default)]
    pub request_timeout_s: String,
    /// Random dataset: tokens of a random prefix shared by every prompt; empty = none.
    #[serde(default)]
    pub prefix_len: String,
    /// Sampling parameters sent only when filled in (the server's defaults otherwise).
    #[serde(default)]
    pub top_p: String,
    #[serde(default)]
    pub top_k: String,
    #[serde(default)]
    pub min_p: String,
    #[serde(default)]
    pub frequency_penalty: String,
    #[serde(default)]
    pub presence_penalty: String,
    #[serde(default)]
    pub repetition_penalty: String,
    /// Empty (a fixed rate), `linear` or `exponential`.
    #[serde(default)]
    pub ramp_up_strategy: String,
    #[serde(default)]
    pub ramp_up_start_rps: String,
    #[serde(default)]
    pub ramp_up_end_rps: String,
}

impl Default for RunForm {
    fn default() -> Self {
        RunForm {
            label: String::new(),
            target_kind: "external".into(),
            base_url: "http://127.0.0.1:8000".into(),
            api_key_env: String::new(),
            model_source: "random:tiny".into(),
            device: "auto".into(),
            max_batch: String::new(),
            quantization: "none".into(),
            speculative: None,
            draft_model: String::new(),
            spec_num_steps: String::new(),
            spec_topk: String::new(),
            spec_num_draft_tokens: String::new(),
            spec_synthetic: String::new(),
            native_ladder: None,
            presets: "vllm-bf16, sglang-bf16".into(),
            model: "Qwen/Qwen3-8B".into(),
            tokenizer: String::new(),
            backend: "openai-chat".into(),
            dataset_kind: "sharegpt".into(),
            dataset_path: String::new(),
            input_len: "1024".into(),
            output_len: String::new(),
            num_prompts: "100".into(),
            max_concurrency: "1".into(),
            request_rate: String::new(),
            arrival: "poisson".into(),
            burstiness: "1".into(),
            percentiles: "99".into(),
            goodput_ttft_ms: String::new(),
            goodput_tpot_ms: String::new(),
            goodput_e2el_ms: String::new(),
            seed: "0".into(),
            ignore_eos: None,
            temperature: "0".into(),
            warmup_requests: "0".into(),
            request_timeout_s: "600".into(),
            prefix_len: String::new(),
            top_p: String::new(),
            top_k: String::new(),
            min_p: String::new(),
            frequency_penalty: String::new(),
            presence_penalty: String::new(),
            repetition_penalty: String::new(),
            ramp_up_strategy: String::new(),
            ramp_up_start_rps: String::new(),
            ramp_up_end_rps: String::new(),
        }
    }
}

mod fan_out;
mod from_spec;
mod load;
mod parser;
mod target;
mod to_spec;

#[cfg(test)]
mod tests;
