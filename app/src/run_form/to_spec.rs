//! The form as one `RunSpec`: every field parsed in the order the form lists them, then
//! `RunSpec::validate`, each error under its field's path.

use super::parser::{NUMBER, Parser, WHOLE, not_a, opt_text, ticked};
use super::{RunForm, load};
use bench_types::{
    Backend, Dataset, LoadProfile, RampUp, RampUpStrategy, RunSpec, Sampling, ValidationErrors,
};

impl RunForm {
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
}
