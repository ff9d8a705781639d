//! The new-run form as the browser sends it (every field a string, as typed) and its
//! translation to a `RunSpec`. Parsing errors and `RunSpec::validate` errors come back
//! under the spec's field paths, so each message lands beside its input, in the browser
//! while typing and on the server after submitting.

use bench_types::launched::{LaunchedTarget, Speculative, SpeculativeAlgorithm, seed_presets};
use bench_types::native_ladder::native_ladder;
use bench_types::native_speculative::random_draft_for;
use bench_types::{
    Backend, CreatedRuns, Dataset, Device, LoadProfile, NativeTarget, Quantization, RampUp, RampUpStrategy,
    RunSpec, Sampling, Target, ValidationErrors,
};
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

/// Collects parse errors under spec paths; a field that failed to parse is not also
/// reported by `validate`.
struct Parser {
    errors: ValidationErrors,
}

impl Parser {
    fn num<T: std::str::FromStr>(&mut self, field: &str, raw: &str, what: &str, fallback: T) -> T {
        match raw.trim().parse::<T>() {
            Ok(v) => v,
            Err(_) if raw.trim().is_empty() => {
                self.errors.push(field, "is required");
                fallback
            }
            Err(_) => {
                self.errors.push(field, not_a(raw.trim(), what));
                fallback
            }
        }
    }
    fn opt_num<T: std::str::FromStr>(&mut self, field: &str, raw: &str, what: &str) -> Option<T> {
        if raw.trim().is_empty() {
            return None;
        }
        match raw.trim().parse::<T>() {
            Ok(v) => Some(v),
            Err(_) => {
                self.errors.push(field, not_a(raw.trim(), what));
                None
            }
        }
    }
}

/// Why `raw` is not `what`: "-5" is a whole number, just a negative one; "99999999999"
/// is one too large for the field; "abc" is no number at all.
fn not_a(raw: &str, what: &str) -> String {
    match raw.parse::<i128>() {
        Ok(v) if v < 0 && what == WHOLE => format!("{raw} is negative; use a positive whole number"),
        Ok(_) if what == WHOLE => format!("{raw} is too large"),
        _ => format!("{raw:?} is not {what}"),
    }
}

const WHOLE: &str = "a whole number";
const NUMBER: &str = "a number";

/// A ticked checkbox posts "on" (the browser) or "true" (a client sending JSON).
fn ticked(v: &Option<String>) -> bool {
    v.as_deref().is_some_and(|v| v == "on" || v == "true")
}

fn opt_text(s: &str) -> Option<String> {
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

impl RunForm {
    /// The named presets, in order; an error names the first unknown one.
    pub fn launched_targets(&self) -> Result<Vec<(&'static str, LaunchedTarget)>, String> {
        let presets = seed_presets();
        let mut out = Vec::new();
        for name in self.presets.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match presets.iter().find(|(n, _)| *n == name) {
                Some((n, t)) if !out.iter().any(|(m, _)| m == n) => out.push((*n, t.clone())),
                Some(_) => return Err(format!("{name:?} is listed twice")),
                None => {
                    let known: Vec<&str> = presets.iter().map(|(n, _)| *n).collect();
                    return Err(format!("unknown preset {name:?}; known: {}", known.join(", ")));
                }
            }
        }
        if out.is_empty() {
            return Err("name at least one preset, e.g. vllm-bf16".into());
        }
        Ok(out)
    }

    /// The exact commands the presets will run (shown under the field).
    pub fn launch_preview(&self) -> Vec<String> {
        self.launched_targets()
            .map(|ts| {
                ts.iter().map(|(n, t)| format!("{n}: {}", t.render(None, "<run dir>").display())).collect()
            })
            .unwrap_or_default()
    }

    /// Every spec the form asks for: one, or one per launched preset (each served under
    /// its own model name, which requests must use).
    pub fn to_specs(&self) -> Result<Vec<RunSpec>, ValidationErrors> {
        let base = self.to_spec()?;
        if self.is_native_ladder() {
            return self.ladder_specs(&base);
        }
        if self.target_kind != "launched" {
            return Ok(vec![base]);
        }
        let targets = self.launched_targets().expect("checked by to_spec");
        let many = targets.len() > 1;
        targets
            .into_iter()
            .map(|(name, t)| {
                let mut spec = base.clone();
                spec.model = t.model.clone();
                spec.label = match (base.label.is_empty(), many) {
                    (true, _) => name.to_string(),
                    (false, true) => format!("{} · {name}", base.label),
                    (false, false) => base.label.clone(),
                };
                spec.target = Target::Launched(t);
                spec.validate().map(|()| spec)
            })
            .collect()
    }

    /// Where the browser goes once the runs exist: the comparison of several (a native
    /// ladder opens on its ladder chart of TPOT, the latency FP8 and speculation act on),
    /// else the run.
    pub fn created_url(&self, created: &CreatedRuns) -> String {
        match (&created.comparison_slug, created.run_ids.first()) {
            (Some(slug), _) if self.is_native_ladder() => format!("/c/{slug}?chart=ladder&metric=tpot"),
            // A rate sweep is read as latency against the throughput each rate reached.
            (Some(slug), _) if self.is_rate_sweep() => format!("/c/{slug}?chart=curve"),
            (Some(slug), _) => format!("/c/{slug}"),
            (None, Some(id)) => format!("/runs/{id}"),
            (None, None) => "/runs".to_string(),
        }
    }

    /// Whether the form asks for the native ladder rather than one native target.
    pub fn is_native_ladder(&self) -> bool {
        self.target_kind == "native" && ticked(&self.native_ladder)
    }

    /// One spec per rung of the native ladder, from the form's model, device and batch (its
    /// weights and speculation fields are the rungs' to set).
    fn ladder_specs(&self, base: &RunSpec) -> Result<Vec<RunSpec>, ValidationErrors> {
        let mut e = ValidationErrors::default();
        let Target::Native(n) = &base.target else { unreachable!("a native form") };
        if base.load.max_concurrency.len() > 1 {
            // The ladder chart compares rung with rung; a sweep would interleave loads.
            e.push(
                "load.max_concurrency",
                "the native ladder compares its rungs at one concurrency; start one ladder per value",
            );
            return Err(e);
        }
        if self.is_rate_sweep() {
            e.push(
                load::RATE_FIELD,
                "the native ladder compares its rungs at one load; start one ladder per rate",
            );
            return Err(e);
        }
        let rungs = native_ladder(n, Some(&self.draft_model)).map_err(|m| {
            e.push("target.speculative.draft_model", m);
            e
        })?;
        rungs
            .into_iter()
            .map(|r| {
                let mut spec = base.clone();
                spec.target = Target::Native(r.target);
                spec.label = match base.label.is_empty() {
                    true => format!("native ladder · {}", r.name),
                    false => format!("{} · {}", base.label, r.name),
                };
                spec.validate().map(|()| spec)
            })
            .collect()
    }

    /// EAGLE-3 options when the box is ticked; the draft defaults to the random model's own.
    fn speculative(&self, p: &mut Parser) -> Option<Speculative> {
        if !ticked(&self.speculative) {
            return None;
        }
        let draft_model = match self.draft_model.trim() {
            "" => random_draft_for(self.model_source.trim()).unwrap_or_default(),
            d => d.to_string(),
        };
        Some(Speculative {
            algorithm: SpeculativeAlgorithm::Eagle3,
            draft_model,
            num_steps: p.opt_num("target.speculative.num_steps", &self.spec_num_steps, WHOLE),
            topk: p.opt_num("target.speculative.topk", &self.spec_topk, WHOLE),
            num_draft_tokens: p.opt_num(
                "target.speculative.num_draft_tokens",
                &self.spec_num_draft_tokens,
                WHOLE,
            ),
        })
    }

    fn ramp_up(&self, p: &mut Parser) -> Option<RampUp> {
        let strategy = match self.ramp_up_strategy.trim() {
            "" | "none" => return None,
            "linear" => RampUpStrategy::Linear,
            "exponential" => RampUpStrategy::Exponential,
            other => {
                p.errors.push(
                    "ramp_up.strategy",
                    format!("unknown ramp-up {other:?}; choose linear or exponential"),
                );
                return None;
            }
        };
        Some(RampUp {
            strategy,
            start_rps: p.num("ramp_up.start_rps", &self.ramp_up_start_rps, WHOLE, 1),
            end_rps: p.num("ramp_up.end_rps", &self.ramp_up_end_rps, WHOLE, 1),
        })
    }

    /// Whether any optional sampling parameter is filled in (its section shows open).
    pub fn has_sampling_parameters(&self) -> bool {
        [
            &self.top_p,
            &self.top_k,
            &self.min_p,
            &self.frequency_penalty,
            &self.presence_penalty,
            &self.repetition_penalty,
        ]
        .iter()
        .any(|v| !v.trim().is_empty())
    }

    pub fn to_spec(&self) -> Result<RunSpec, ValidationErrors> {
        let mut p = Parser { errors: ValidationErrors::default() };
        // Parsed in the order the form lists them, so errors come in that order too.
        let target = self.target(&mut p);
        let backend = self.backend(&mut p);
        let dataset = self.dataset(&mut p);
        let max_concurrency = self.max_concurrency(&mut p);
        let (request_rate, request_rates) = self.rates(&mut p);
        let spec = RunSpec {
            label: self.label.trim().to_string(),
            model: self.served_model(&target),
            target,
            tokenizer: opt_text(&self.tokenizer),
            backend,
            dataset,
            num_prompts: p.num("num_prompts", &self.num_prompts, WHOLE, 1),
            load: LoadProfile {
                max_concurrency,
                request_rate,
                request_rates,
                burstiness: self.burstiness_value(&mut p),
            },
            sampling: self.sampling(&mut p),
            seed: if self.seed.trim().is_empty() { 0 } else { p.num("seed", &self.seed, WHOLE, 0) },
            warmup_requests: if self.warmup_requests.trim().is_empty() {
                0
            } else {
                p.num("warmup_requests", &self.warmup_requests, WHOLE, 0)
            },
            request_timeout_s: if self.request_timeout_s.trim().is_empty() {
                bench_types::spec::default_request_timeout_s()
            } else {
                p.num("request_timeout_s", &self.request_timeout_s, NUMBER, 600.0)
            },
            percentiles: self.percentiles_value(&mut p),
            goodput: self.goodput_value(&mut p),
            time_limit_s: None,
            ramp_up: self.ramp_up(&mut p),
            disable_shuffle: false,
            no_oversample: false,
        };
        let mut errors = p.errors;
        if let Err(v) = spec.validate() {
            for mut e in v.0 {
                if e.field == "load.request_rates" {
                    e.field = load::RATE_FIELD.to_string();
                }
                if errors.for_field(&e.field).is_none() {
                    errors.0.push(e);
                }
            }
        }
        errors.into_result().map(|()| spec)
    }

    fn target(&self, p: &mut Parser) -> Target {
        let placeholder = || Target::External { base_url: "http://127.0.0.1".into(), api_key_env: None };
        match self.target_kind.as_str() {
            "external" => Target::External {
                base_url: self.base_url.trim().to_string(),
                api_key_env: opt_text(&self.api_key_env),
            },
            "native" => Target::Native(self.native_target(p)),
            "launched" => match self.launched_targets() {
                Ok(mut targets) => Target::Launched(targets.remove(0).1),
                Err(msg) => {
                    p.errors.push("target.presets", msg);
                    placeholder()
                }
            },
            other => {
                p.errors.push(
                    "target.kind",
                    format!("unknown target {other:?}; choose external, native or launched"),
                );
                placeholder()
            }
        }
    }

    fn native_target(&self, p: &mut Parser) -> NativeTarget {
        NativeTarget {
            model_source: self.model_source.trim().to_string(),
            device: match self.device.as_str() {
                "cpu" => Device::Cpu,
                "cuda" => Device::Cuda,
                _ => Device::Auto,
            },
            quantization: match self.quantization.trim() {
                "" | "none" => Quantization::None,
                "fp8" => Quantization::Fp8,
                other => {
                    p.errors.push(
                        "target.quantization",
                        format!("unknown weights {other:?}; choose none or fp8"),
                    );
                    Quantization::None
                }
            },
            max_batch: p.opt_num("target.max_batch", &self.max_batch, WHOLE),
            cuda_graphs: true,
            speculative: self.speculative(p),
        }
    }

    /// The native engine serves whatever name requests use; left at the form's default
    /// (a real checkpoint's id), it is named after what it serves instead.
    fn served_model(&self, target: &Target) -> String {
        match target {
            Target::Native(n)
                if self.model.trim().is_empty() || self.model.trim() == RunForm::default().model =>
            {
                n.model_source.trim_end_matches('/').rsplit('/').next().unwrap_or(&n.model_source).to_string()
            }
            _ => self.model.trim().to_string(),
        }
    }

    fn backend(&self, p: &mut Parser) -> Backend {
        match self.backend.as_str() {
            "" | "openai-chat" => Backend::OpenaiChat,
            "openai" => Backend::Openai,
            other => {
                p.errors.push("backend", format!("unknown backend {other:?}"));
                Backend::OpenaiChat
            }
        }
    }

    fn dataset(&self, p: &mut Parser) -> Dataset {
        match self.dataset_kind.as_str() {
            "sharegpt" => Dataset::Sharegpt {
                path: opt_text(&self.dataset_path),
                output_len: p.opt_num("dataset.output_len", &self.output_len, WHOLE),
            },
            "random" => Dataset::Random {
                input_len: p.num("dataset.input_len", &self.input_len, WHOLE, 1),
                output_len: p.num("dataset.output_len", &self.output_len, WHOLE, 1),
                range_ratio: 0.0,
                prefix_len: p.opt_num("dataset.prefix_len", &self.prefix_len, WHOLE).unwrap_or(0),
            },
            "jsonl" => Dataset::Jsonl { path: self.dataset_path.trim().to_string() },
            other => {
                p.errors.push("dataset.kind", format!("unknown dataset {other:?}"));
                Dataset::Sharegpt { path: None, output_len: None }
            }
        }
    }

    /// The sweep's values; every bad value is named at once, not only the first.
    fn max_concurrency(&self, p: &mut Parser) -> Vec<u32> {
        use bench_types::validate::limits::MAX_CONCURRENCY;
        let mut values = Vec::new();
        let mut bad = Vec::new();
        for part in self.max_concurrency.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match part.parse::<u32>() {
                Ok(v) if v == 0 || v > MAX_CONCURRENCY => {
                    bad.push(format!("{v} is out of range (1 to {MAX_CONCURRENCY})"))
                }
                Ok(v) => values.push(v),
                Err(_) => bad.push(not_a(part, WHOLE)),
            }
        }
        if !bad.is_empty() {
            p.errors.push("load.max_concurrency", format!("{}; use e.g. 1,2,4,8", bad.join("; ")));
            values.clear();
        }
        values
    }

    fn sampling(&self, p: &mut Parser) -> Sampling {
        Sampling {
            // vLLM always sends ignore_eos with the random dataset; the spec says so.
            ignore_eos: ticked(&self.ignore_eos) || self.dataset_kind == "random",
            temperature: p.opt_num("sampling.temperature", &self.temperature, NUMBER),
            extra_body: None,
            top_p: p.opt_num("sampling.top_p", &self.top_p, NUMBER),
            top_k: p.opt_num("sampling.top_k", &self.top_k, WHOLE),
            min_p: p.opt_num("sampling.min_p", &self.min_p, NUMBER),
            frequency_penalty: p.opt_num("sampling.frequency_penalty", &self.frequency_penalty, NUMBER),
            presence_penalty: p.opt_num("sampling.presence_penalty", &self.presence_penalty, NUMBER),
            repetition_penalty: p.opt_num("sampling.repetition_penalty", &self.repetition_penalty, NUMBER),
        }
    }
}

mod from_spec;
mod load;

#[cfg(test)]
mod tests;
