//! `RunSpec::validate`: every field of a run's spec checked, all problems reported at once.

use super::fields::{
    check_base_url, check_env_name, check_model_source, check_path, check_text, check_tokens,
};
use super::{ValidationErrors, limits};
use crate::spec::{Dataset, RunSpec, Target};

impl RunSpec {
    /// Checks every field and reports all problems at once, each naming its field.
    /// Runs unchanged in the browser (wasm) and on the server.
    pub fn validate(&self) -> Result<(), ValidationErrors> {
        use limits::*;
        let mut e = ValidationErrors::default();
        check_text(&mut e, "label", &self.label, true);
        check_text(&mut e, "model", &self.model, false);
        if let Some(t) = &self.tokenizer {
            check_path(&mut e, "tokenizer", t);
        }
        match &self.target {
            Target::External { base_url, api_key_env } => {
                check_base_url(&mut e, "target.base_url", base_url);
                if let Some(name) = api_key_env {
                    check_env_name(&mut e, "target.api_key_env", name);
                }
            }
            Target::Native(n) => {
                check_model_source(&mut e, "target.model_source", &n.model_source);
                // None: the engine's own default.
                if n.max_batch.is_some_and(|b| b == 0 || b > MAX_MAX_BATCH) {
                    e.push("target.max_batch", format!("must be between 1 and {MAX_MAX_BATCH}"));
                }
                if let Some(s) = &n.speculative {
                    crate::native_speculative::validate_into(s, &n.model_source, &mut e);
                }
                crate::native_speculative::validate_synthetic(n, &mut e);
            }
            Target::Launched(l) => l.validate_into(&mut e),
            Target::Imported(i) => i.validate_into(&mut e),
        }
        match &self.dataset {
            Dataset::Sharegpt { path, output_len } => {
                if let Some(p) = path {
                    check_path(&mut e, "dataset.path", p);
                }
                if let Some(n) = output_len {
                    check_tokens(&mut e, "dataset.output_len", *n);
                }
            }
            Dataset::Random { input_len, output_len, range_ratio, prefix_len } => {
                check_tokens(&mut e, "dataset.input_len", *input_len);
                check_tokens(&mut e, "dataset.output_len", *output_len);
                if !(range_ratio.is_finite() && (0.0..1.0).contains(range_ratio)) {
                    e.push("dataset.range_ratio", "must be at least 0 and below 1");
                }
                if *prefix_len > MAX_TOKENS {
                    e.push("dataset.prefix_len", format!("must be at most {MAX_TOKENS} tokens"));
                }
            }
            Dataset::Jsonl { path } => check_path(&mut e, "dataset.path", path),
        }
        if self.num_prompts == 0 || self.num_prompts > MAX_NUM_PROMPTS {
            e.push("num_prompts", format!("must be between 1 and {MAX_NUM_PROMPTS}"));
        }
        let c = &self.load.max_concurrency;
        if c.len() > MAX_SWEEP_VALUES {
            e.push("load.max_concurrency", format!("at most {MAX_SWEEP_VALUES} values"));
        } else if let Some(bad) = c.iter().find(|&&v| v == 0 || v > MAX_CONCURRENCY) {
            e.push(
                "load.max_concurrency",
                format!("{bad} is out of range: each value must be between 1 and {MAX_CONCURRENCY}"),
            );
        } else if (1..c.len()).any(|i| c[..i].contains(&c[i])) {
            e.push("load.max_concurrency", "values must not repeat");
        }
        if let Some(r) = self.load.request_rate
            && !(r.is_finite() && r > 0.0 && r <= MAX_REQUEST_RATE)
        {
            e.push(
                "load.request_rate",
                format!("must be above 0 and at most {MAX_REQUEST_RATE} requests/s (leave empty for inf)"),
            );
        }
        crate::rate_sweep::validate_into(self, &mut e);
        let b = self.load.burstiness;
        if !(b.is_finite() && b > 0.0 && b <= 1_000.0) {
            e.push("load.burstiness", "must be above 0 and at most 1000");
        }
        if let Some(t) = self.sampling.temperature
            && !(t.is_finite() && (0.0..=2.0).contains(&t))
        {
            e.push("sampling.temperature", "must be between 0 and 2");
        }
        check_sampling(&mut e, &self.sampling);
        if let Some(x) = &self.sampling.extra_body {
            if !x.is_object() {
                e.push("sampling.extra_body", "must be a JSON object");
            }
            crate::text::check_json(&mut e, "sampling.extra_body", x);
        }
        if self.warmup_requests > MAX_WARMUP {
            e.push("warmup_requests", format!("must be at most {MAX_WARMUP}"));
        }
        let t = self.request_timeout_s;
        if !(t.is_finite() && (1.0..=MAX_TIMEOUT_S).contains(&t)) {
            e.push("request_timeout_s", format!("must be between 1 and {MAX_TIMEOUT_S} seconds"));
        }
        if let Some(t) = self.time_limit_s
            && !(t.is_finite() && (1.0..=7.0 * MAX_TIMEOUT_S).contains(&t))
        {
            e.push("time_limit_s", "must be between 1 second and 7 days");
        }
        if self.percentiles.len() > 16 {
            e.push("percentiles", "at most 16 values");
        } else if self.percentiles.iter().any(|p| !(p.is_finite() && *p > 0.0 && *p < 100.0)) {
            e.push("percentiles", "each must be above 0 and below 100");
        }
        for (field, v) in [
            ("goodput.ttft_ms", self.goodput.ttft_ms),
            ("goodput.tpot_ms", self.goodput.tpot_ms),
            ("goodput.e2el_ms", self.goodput.e2el_ms),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                e.push(field, "must be a positive number of milliseconds");
            }
        }
        if let Some(r) = &self.ramp_up {
            if self.load.request_rate.is_some() {
                e.push("load.request_rate", "must be empty (inf) with a ramp-up: the ramp sets the rate");
            }
            let max = MAX_REQUEST_RATE as u32;
            if r.start_rps == 0 || r.start_rps > max {
                // vLLM refuses a rate of 0 for any request, and the first asks for start_rps.
                e.push("ramp_up.start_rps", format!("must be between 1 and {max} requests/s"));
            }
            if r.end_rps > max {
                e.push("ramp_up.end_rps", format!("must be at most {max} requests/s"));
            } else if r.end_rps < r.start_rps {
                e.push("ramp_up.end_rps", "must be at least start_rps (the rate ramps up)");
            }
        }
        e.into_result()
    }
}

/// vLLM's own bounds for each sampling parameter (`SamplingParams`), so a typo is caught
/// here rather than as a 400 from every request.
fn check_sampling(e: &mut ValidationErrors, s: &crate::spec::Sampling) {
    let within = |v: Option<f64>, lo: f64, hi: f64, lo_open: bool| {
        v.is_none_or(|v| v.is_finite() && v <= hi && if lo_open { v > lo } else { v >= lo })
    };
    if !within(s.top_p, 0.0, 1.0, true) {
        e.push("sampling.top_p", "must be above 0 and at most 1");
    }
    if s.top_k.is_some_and(|k| !(-1..=1_000_000).contains(&k)) {
        e.push("sampling.top_k", "must be -1 or 0 (no limit), or a number of tokens up to 1000000");
    }
    if !within(s.min_p, 0.0, 1.0, false) {
        e.push("sampling.min_p", "must be between 0 and 1");
    }
    for (field, v) in [
        ("sampling.frequency_penalty", s.frequency_penalty),
        ("sampling.presence_penalty", s.presence_penalty),
    ] {
        if !within(v, -2.0, 2.0, false) {
            e.push(field, "must be between -2 and 2");
        }
    }
    if !within(s.repetition_penalty, 0.0, f64::MAX, true) {
        e.push("sampling.repetition_penalty", "must be above 0 (1 = no penalty)");
    }
}
