//! Validation errors that name the offending field, so forms can show them inline and
//! the API can answer 400 with the same words.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// Dotted path of the field as it appears in the JSON form of the spec, e.g.
    /// `load.max_concurrency` or `target.base_url`.
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationErrors(pub Vec<FieldError>);

impl ValidationErrors {
    pub fn push(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError { field: field.to_string(), message: message.into() });
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// First message for a field (the form shows one message per input).
    pub fn for_field(&self, field: &str) -> Option<&str> {
        self.0.iter().find(|e| e.field == field).map(|e| e.message.as_str())
    }
    pub fn into_result(self) -> Result<(), ValidationErrors> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
        f.write_str(&parts.join("; "))
    }
}

impl std::error::Error for ValidationErrors {}

use crate::spec::{Dataset, RunSpec, Target};

/// Bounds that keep a run from starting something absurd; each is far beyond any real
/// benchmark but small enough that a typo (an extra zero or three) is caught.
pub mod limits {
    pub const MAX_NUM_PROMPTS: u32 = 100_000;
    pub const MAX_CONCURRENCY: u32 = 4_096;
    pub const MAX_SWEEP_VALUES: usize = 32;
    pub const MAX_REQUEST_RATE: f64 = 100_000.0;
    pub const MAX_TOKENS: u32 = 1_000_000;
    pub const MAX_TIMEOUT_S: f64 = 86_400.0;
    pub const MAX_WARMUP: u32 = 10_000;
    pub const MAX_TEXT: usize = 512;
    pub const MAX_MAX_BATCH: u32 = 1_024;
}

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
                if n.max_batch == 0 || n.max_batch > MAX_MAX_BATCH {
                    e.push("target.max_batch", format!("must be between 1 and {MAX_MAX_BATCH}"));
                }
                if let Some(s) = &n.speculative {
                    crate::native_speculative::validate_into(s, &n.model_source, &mut e);
                }
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

/// A one-line text field: no control characters (line breaks included) and nothing
/// `text::forbidden_char` refuses.
pub(crate) fn check_text(e: &mut ValidationErrors, field: &str, s: &str, may_be_empty: bool) {
    if !may_be_empty && s.trim().is_empty() {
        e.push(field, "is required");
    } else if s.len() > limits::MAX_TEXT {
        e.push(field, format!("must be at most {} characters", limits::MAX_TEXT));
    } else if let Some(c) = crate::text::forbidden_char(s) {
        e.push(field, format!("must not contain {}", crate::text::describe(c)));
    } else if s.chars().any(char::is_control) {
        e.push(field, "must not contain control characters (line breaks or tabs)");
    }
}

/// Paths reach the worker's file system and, for launched engines, an argv: no control
/// characters, no shell metacharacters, nothing that could be read as a flag, and no `..`
/// or `~` (the worker reads files only under its configured roots, and a path must say
/// plainly where it points). Relative paths are relative to the worker's assets folder.
pub(crate) fn check_path(e: &mut ValidationErrors, field: &str, p: &str) {
    if let Some(problem) = path_problem(p) {
        e.push(field, problem);
    }
}

/// What is wrong with `p` as a path a request may name, if anything.
pub fn path_problem(p: &str) -> Option<String> {
    if p.trim().is_empty() {
        Some("must not be empty".into())
    } else if p.len() > limits::MAX_TEXT {
        Some(format!("must be at most {} characters", limits::MAX_TEXT))
    } else if p.starts_with('-') {
        Some("must not start with '-'".into())
    } else if let Some(c) = crate::text::forbidden_char(p) {
        Some(format!("must not contain {}", crate::text::describe(c)))
    } else if let Some(c) = p.chars().find(|c| c.is_control() || "`$;|&<>\"'\\*?!{}".contains(*c)) {
        Some(format!("must not contain {c:?}"))
    } else if p.starts_with('~') {
        Some("must not start with '~' (name the folder itself)".into())
    } else if p.split('/').any(|part| part == "..") {
        Some("must not contain '..' (files are read only under the worker's configured folders)".into())
    } else {
        None
    }
}

fn check_model_source(e: &mut ValidationErrors, field: &str, s: &str) {
    match s.strip_prefix("random:") {
        Some("") => e.push(field, "random: needs a preset name, e.g. random:tiny"),
        Some(preset)
            if !preset.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_') =>
        {
            e.push(field, "preset names use letters, digits, '-', '_' and '.'")
        }
        Some(_) => {}
        None => check_path(e, field, s),
    }
}

fn check_tokens(e: &mut ValidationErrors, field: &str, n: u32) {
    if n == 0 || n > limits::MAX_TOKENS {
        e.push(field, format!("must be between 1 and {} tokens", limits::MAX_TOKENS));
    }
}

/// Prefix of the environment variables a worker's operator opts in as API keys that runs
/// may send to their targets. Nothing else in a worker's environment can be named: not
/// its API token, not `DATABASE_URL`, not whatever else the host happens to export.
pub const API_KEY_ENV_PREFIX: &str = "LATLAB_KEY_";

fn check_env_name(e: &mut ValidationErrors, field: &str, name: &str) {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        e.push(field, "must be an environment variable name (letters, digits, '_'), not the key itself");
    } else if !name.starts_with(API_KEY_ENV_PREFIX) || name.len() == API_KEY_ENV_PREFIX.len() {
        e.push(
            field,
            format!("must name a key the worker's operator opted in: a variable whose name starts with {API_KEY_ENV_PREFIX} (e.g. {API_KEY_ENV_PREFIX}OPENAI)"),
        );
    }
}

fn check_base_url(e: &mut ValidationErrors, field: &str, url: &str) {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    match rest {
        None => e.push(field, "must start with http:// or https://"),
        Some(r) if r.is_empty() || r.starts_with('/') => e.push(field, "must name a host"),
        Some(_) if url.len() > limits::MAX_TEXT => e.push(field, "is too long"),
        Some(r) if r.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            e.push(field, "must not contain spaces")
        }
        Some(r) if r.contains('@') => e.push(field, "must not carry credentials; use api_key_env"),
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::*;

    pub(crate) fn sample() -> RunSpec {
        RunSpec {
            label: "seed BS sweep".into(),
            target: Target::External { base_url: "http://127.0.0.1:8000".into(), api_key_env: None },
            model: "Qwen/Qwen3-8B".into(),
            tokenizer: None,
            backend: Backend::OpenaiChat,
            dataset: Dataset::Sharegpt { path: None, output_len: None },
            num_prompts: 100,
            load: LoadProfile {
                max_concurrency: vec![1, 2, 4, 8],
                request_rate: None,
                request_rates: vec![],
                burstiness: 1.0,
            },
            sampling: Sampling::default(),
            seed: 0,
            warmup_requests: 0,
            request_timeout_s: 600.0,
            percentiles: vec![99.0],
            goodput: Goodput::default(),
            time_limit_s: None,
            ramp_up: None,
            disable_shuffle: false,
            no_oversample: false,
        }
    }

    #[test]
    fn a_sane_spec_passes_and_round_trips() {
        let s = sample();
        s.validate().unwrap();
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["target"]["kind"], "external");
        assert_eq!(json["backend"], "openai-chat");
        let back: RunSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn every_bad_field_is_named() {
        let mut s = sample();
        s.model = " ".into();
        s.num_prompts = 0;
        s.load.max_concurrency = vec![1, 0];
        s.load.request_rate = Some(-1.0);
        s.target = Target::External { base_url: "ftp://x".into(), api_key_env: Some("sk-123".into()) };
        let errs = s.validate().unwrap_err();
        for f in [
            "model",
            "num_prompts",
            "load.max_concurrency",
            "load.request_rate",
            "target.base_url",
            "target.api_key_env",
        ] {
            assert!(errs.for_field(f).is_some(), "no error for {f}: {errs}");
        }
        assert_eq!(errs.0.len(), 6, "{errs}");
    }

    #[test]
    fn shell_metacharacters_in_paths_are_rejected() {
        let mut s = sample();
        s.dataset = Dataset::Jsonl { path: "/tmp/a;rm -rf /".into() };
        assert!(s.validate().unwrap_err().for_field("dataset.path").unwrap().contains("';'"));
        s.dataset = Dataset::Jsonl { path: "--help".into() };
        assert!(s.validate().is_err());
        s.dataset = Dataset::Jsonl { path: "/data/prompts.jsonl".into() };
        s.validate().unwrap();
    }

    #[test]
    fn api_keys_come_only_from_variables_the_operator_opted_in() {
        let mut s = sample();
        for name in ["LATLAB_API_TOKEN", "DATABASE_URL", "HOME", "LATLAB_KEY_", "AWS_SECRET_ACCESS_KEY"] {
            s.target =
                Target::External { base_url: "http://127.0.0.1:8000".into(), api_key_env: Some(name.into()) };
            let m = s.validate().unwrap_err().for_field("target.api_key_env").unwrap().to_string();
            assert!(m.contains("LATLAB_KEY_"), "{name}: {m}");
        }
        s.target = Target::External {
            base_url: "http://127.0.0.1:8000".into(),
            api_key_env: Some("LATLAB_KEY_OPENAI".into()),
        };
        s.validate().unwrap();
    }

    #[test]
    fn paths_may_not_climb_out_or_hide_where_they_point() {
        let mut s = sample();
        for bad in ["../etc/passwd", "/srv/data/../../etc/shadow", "~/x.jsonl", "a\u{202E}b.jsonl", "x\0"] {
            s.dataset = Dataset::Jsonl { path: bad.into() };
            assert!(s.validate().unwrap_err().for_field("dataset.path").is_some(), "{bad:?} accepted");
        }
        for good in ["prompts.jsonl", "/srv/latlab/data/prompts.jsonl", "sets/a..b.jsonl"] {
            s.dataset = Dataset::Jsonl { path: good.into() };
            s.validate().unwrap();
        }
    }

    #[test]
    fn nul_and_bidi_controls_are_refused_in_text_and_nested_json() {
        let mut s = sample();
        s.label = "fast \u{202E}4pu".into();
        s.sampling.extra_body = Some(serde_json::json!({"chat_template_kwargs": {"x": ["ok", "nul\u{0}"]}}));
        let e = s.validate().unwrap_err();
        assert!(e.for_field("label").unwrap().contains("U+202E"), "{e}");
        assert!(e.for_field("sampling.extra_body.chat_template_kwargs.x[1]").unwrap().contains("NUL"), "{e}");
    }

    #[test]
    fn repeated_or_huge_concurrency_is_rejected() {
        let mut s = sample();
        s.load.max_concurrency = vec![2, 2];
        assert_eq!(
            s.validate().unwrap_err().for_field("load.max_concurrency"),
            Some("values must not repeat")
        );
        s.load.max_concurrency = vec![100_000];
        assert!(s.validate().is_err());
    }

    #[test]
    fn unknown_fields_are_refused_by_serde() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v["num_promts"] = 5.into();
        let err = serde_json::from_value::<RunSpec>(v).unwrap_err().to_string();
        assert!(err.contains("num_promts"), "{err}");
    }

    #[test]
    fn sampling_parameters_are_checked_against_vllms_bounds() {
        let mut s = sample();
        s.sampling.top_p = Some(0.0);
        s.sampling.top_k = Some(-2);
        s.sampling.min_p = Some(1.5);
        s.sampling.frequency_penalty = Some(2.5);
        s.sampling.presence_penalty = Some(f64::NAN);
        s.sampling.repetition_penalty = Some(0.0);
        let e = s.validate().unwrap_err();
        for f in ["top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty"] {
            assert!(e.for_field(&format!("sampling.{f}")).is_some(), "{f}: {e}");
        }
        assert_eq!(e.0.len(), 6, "{e}");
        s.sampling.top_p = Some(1.0);
        s.sampling.top_k = Some(-1);
        s.sampling.min_p = Some(0.0);
        s.sampling.frequency_penalty = Some(-2.0);
        s.sampling.presence_penalty = Some(2.0);
        s.sampling.repetition_penalty = Some(1.1);
        s.validate().unwrap();
    }

    #[test]
    fn a_ramp_up_needs_an_open_rate_and_a_rising_range() {
        let mut s = sample();
        s.ramp_up = Some(RampUp { strategy: RampUpStrategy::Linear, start_rps: 0, end_rps: 5 });
        s.load.request_rate = Some(3.0);
        let e = s.validate().unwrap_err();
        assert!(e.for_field("load.request_rate").unwrap().contains("ramp"), "{e}");
        assert!(e.for_field("ramp_up.start_rps").is_some(), "{e}");
        s.load.request_rate = None;
        s.ramp_up = Some(RampUp { strategy: RampUpStrategy::Exponential, start_rps: 8, end_rps: 2 });
        assert_eq!(
            s.validate().unwrap_err().for_field("ramp_up.end_rps"),
            Some("must be at least start_rps (the rate ramps up)")
        );
        s.ramp_up = Some(RampUp { strategy: RampUpStrategy::Exponential, start_rps: 2, end_rps: 8 });
        s.validate().unwrap();
        assert_eq!(s.load_label(), "BS=1,2,4,8 ramp=2-8/s");
    }

    #[test]
    fn specs_stored_before_the_new_fields_read_the_same_and_write_the_same() {
        let old = serde_json::json!({
            "target": {"kind": "external", "base_url": "http://h"}, "model": "m", "num_prompts": 1, "load": {},
            "dataset": {"kind": "random", "input_len": 4, "output_len": 2}, "sampling": {"ignore_eos": false, "temperature": 0.0}
        });
        let s: RunSpec = serde_json::from_value(old).unwrap();
        assert_eq!((s.ramp_up.clone(), s.disable_shuffle, s.no_oversample), (None, false, false));
        assert_eq!(
            s.dataset,
            Dataset::Random { input_len: 4, output_len: 2, range_ratio: 0.0, prefix_len: 0 }
        );
        assert!(s.sends_ignore_eos(), "vLLM sends ignore_eos with the random dataset");
        let back = serde_json::to_value(&s).unwrap();
        for absent in ["ramp_up", "disable_shuffle", "no_oversample"] {
            assert!(back.get(absent).is_none(), "{absent} written although unset: {back}");
        }
        assert!(
            back["dataset"].get("prefix_len").is_none() && back["sampling"].get("top_p").is_none(),
            "{back}"
        );
    }

    #[test]
    fn sweeps_expand_to_one_spec_per_value() {
        let s = sample();
        let runs = s.expand();
        assert_eq!(runs.len(), 4);
        assert_eq!(runs[2].load.max_concurrency, vec![4]);
        assert_eq!(runs[2].load_label(), "BS=4");
        let mut one = sample();
        one.load.max_concurrency = vec![];
        assert_eq!(one.expand().len(), 1);
        assert_eq!(one.load_label(), "rate=inf");
    }
}
