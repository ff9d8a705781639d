//! A stored run's spec back into the form, for "Re-run": the new-run page opens filled in
//! with what that run asked for. The form holds only what a person can type, so a spec is
//! accepted only when the form turns it back into exactly the same spec; anything else
//! (imported results, settings only the JSON API takes) is refused, naming what differs.

use super::RunForm;
use bench_types::launched::seed_presets;
use bench_types::rate_sweep::format_rates;
use bench_types::{Backend, Dataset, Device, Quantization, RunSpec, Target};

/// `Some(v)` as the form's text, `None` as an empty field.
fn text<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn on(ticked: bool) -> Option<String> {
    ticked.then(|| "on".to_string())
}

impl RunForm {
    /// The form that makes `spec` again, or why the form cannot.
    pub fn from_spec(spec: &RunSpec) -> Result<RunForm, String> {
        let mut f = RunForm { label: spec.label.clone(), model: spec.model.clone(), ..RunForm::default() };
        match &spec.target {
            Target::External { base_url, api_key_env } => {
                f.target_kind = "external".into();
                f.base_url = base_url.clone();
                f.api_key_env = api_key_env.clone().unwrap_or_default();
            }
            Target::Native(n) => {
                f.target_kind = "native".into();
                f.model_source = n.model_source.clone();
                f.device = match n.device {
                    Device::Auto => "auto",
                    Device::Cpu => "cpu",
                    Device::Cuda => "cuda",
                }
                .into();
                f.quantization = match n.quantization {
                    Quantization::None => "none",
                    Quantization::Fp8 => "fp8",
                }
                .into();
                f.max_batch = text(n.max_batch);
                if let Some(s) = &n.speculative {
                    f.speculative = on(true);
                    f.draft_model = s.draft_model.clone();
                    f.spec_num_steps = text(s.num_steps);
                    f.spec_topk = text(s.topk);
                    f.spec_num_draft_tokens = text(s.num_draft_tokens);
                }
                f.spec_synthetic = text(n.synthetic_acceptance);
            }
            Target::Launched(t) => {
                f.target_kind = "launched".into();
                let Some((name, _)) = seed_presets().into_iter().find(|(_, p)| p == t) else {
                    return Err("its engine options are not one of the form's presets".into());
                };
                f.presets = name.to_string();
            }
            Target::Imported(_) => {
                return Err(
                    "it was imported: measured elsewhere, so there is nothing here to run again".into()
                );
            }
        }
        f.tokenizer = spec.tokenizer.clone().unwrap_or_default();
        f.backend = match spec.backend {
            Backend::OpenaiChat => "openai-chat",
            Backend::Openai => "openai",
        }
        .into();
        match &spec.dataset {
            Dataset::Sharegpt { path, output_len } => {
                f.dataset_kind = "sharegpt".into();
                f.dataset_path = path.clone().unwrap_or_default();
                f.output_len = text(*output_len);
            }
            Dataset::Random { input_len, output_len, prefix_len, .. } => {
                f.dataset_kind = "random".into();
                f.input_len = input_len.to_string();
                f.output_len = output_len.to_string();
                f.prefix_len = if *prefix_len == 0 { String::new() } else { prefix_len.to_string() };
            }
            Dataset::Jsonl { path } => {
                f.dataset_kind = "jsonl".into();
                f.dataset_path = path.clone();
            }
        }
        f.num_prompts = spec.num_prompts.to_string();
        f.seed = spec.seed.to_string();
        let load = &spec.load;
        f.max_concurrency = load.max_concurrency.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
        f.request_rate = match (load.request_rates.is_empty(), load.request_rate) {
            (false, _) => format_rates(&load.request_rates),
            (true, rate) => text(rate),
        };
        f.arrival = if load.burstiness == 1.0 { "poisson" } else { "gamma" }.into();
        f.burstiness = load.burstiness.to_string();
        if let Some(r) = &spec.ramp_up {
            f.ramp_up_strategy = r.strategy.as_str().into();
            f.ramp_up_start_rps = r.start_rps.to_string();
            f.ramp_up_end_rps = r.end_rps.to_string();
        }
        f.warmup_requests = spec.warmup_requests.to_string();
        f.request_timeout_s = spec.request_timeout_s.to_string();
        f.percentiles = spec.percentiles.iter().map(f64::to_string).collect::<Vec<_>>().join(", ");
        f.goodput_ttft_ms = text(spec.goodput.ttft_ms);
        f.goodput_tpot_ms = text(spec.goodput.tpot_ms);
        f.goodput_e2el_ms = text(spec.goodput.e2el_ms);
        let s = &spec.sampling;
        f.ignore_eos = on(s.ignore_eos);
        f.temperature = text(s.temperature);
        f.top_p = text(s.top_p);
        f.top_k = text(s.top_k);
        f.min_p = text(s.min_p);
        f.frequency_penalty = text(s.frequency_penalty);
        f.presence_penalty = text(s.presence_penalty);
        f.repetition_penalty = text(s.repetition_penalty);
        f.check_round_trip(spec).map(|()| f)
    }

    /// The form must make exactly `spec`: a setting it has no input for (an extra body, a
    /// time limit, a random range ratio...) would otherwise be dropped without a word.
    fn check_round_trip(&self, spec: &RunSpec) -> Result<(), String> {
        let made = match self.to_specs() {
            Ok(specs) if specs.len() == 1 => specs.into_iter().next().expect("one spec"),
            Ok(specs) => return Err(format!("the form would make {} runs of it", specs.len())),
            Err(e) => return Err(format!("the form would refuse it ({e})")),
        };
        let (want, got) = (serde_json::to_value(spec), serde_json::to_value(&made));
        match (want, got) {
            (Ok(w), Ok(g)) if w == g => Ok(()),
            (Ok(w), Ok(g)) => Err(format!(
                "the form has no input for its {}",
                first_difference(&w, &g, "").unwrap_or_else(|| "settings".into())
            )),
            _ => Err("its spec does not serialize".into()),
        }
    }
}

/// The dotted path of the first place `a` and `b` differ ("sampling.extra_body").
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value;
    let join = |k: &str| if at.is_empty() { k.to_string() } else { format!("{at}.{k}") };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
            keys.filter_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &join(k)),
                _ => Some(join(k)),
            })
            .next()
        }
        _ if a == b => None,
        _ => Some(if at.is_empty() { "settings".into() } else { at.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_types::{Goodput, RampUp, RampUpStrategy};

    /// spec -> form -> spec is the identity for every shape the form makes.
    fn round_trips(form: RunForm) {
        for spec in form.to_specs().unwrap() {
            for one in spec.expand() {
                let back = RunForm::from_spec(&one).unwrap_or_else(|e| panic!("{e}: {one:?}"));
                assert_eq!(back.to_specs().unwrap(), vec![one.clone()]);
            }
            if spec.expand().len() == 1 {
                assert_eq!(RunForm::from_spec(&spec).unwrap().to_specs().unwrap(), vec![spec]);
            }
        }
    }

    #[test]
    fn every_shape_the_form_makes_comes_back() {
        let d = RunForm::default();
        round_trips(d.clone());
        round_trips(RunForm {
            label: "rates".into(),
            request_rate: "1, 2.5, inf".into(),
            max_concurrency: "8".into(),
            arrival: "gamma".into(),
            burstiness: "0.5".into(),
            percentiles: "50, 90, 99.9".into(),
            goodput_ttft_ms: "200".into(),
            goodput_tpot_ms: "50".into(),
            goodput_e2el_ms: "1000.5".into(),
            ..d.clone()
        });
        round_trips(RunForm {
            target_kind: "native".into(),
            device: "cpu".into(),
            quantization: "fp8".into(),
            speculative: Some("on".into()),
            spec_num_steps: "3".into(),
            spec_topk: "1".into(),
            spec_synthetic: "2.5".into(),
            dataset_kind: "random".into(),
            input_len: "16".into(),
            output_len: "8".into(),
            prefix_len: "4".into(),
            max_concurrency: "1,2,4".into(),
            temperature: String::new(),
            top_p: "0.9".into(),
            top_k: "-1".into(),
            repetition_penalty: "1.1".into(),
            ..d.clone()
        });
        round_trips(RunForm { target_kind: "native".into(), max_batch: "16".into(), ..d.clone() });
        round_trips(RunForm {
            target_kind: "launched".into(),
            presets: "vllm-bf16, sglang-fp8".into(),
            ..d.clone()
        });
        round_trips(RunForm {
            dataset_kind: "jsonl".into(),
            dataset_path: "/srv/p.jsonl".into(),
            tokenizer: "/srv/tok".into(),
            backend: "openai".into(),
            api_key_env: "LATLAB_KEY_X".into(),
            ramp_up_strategy: "exponential".into(),
            ramp_up_start_rps: "2".into(),
            ramp_up_end_rps: "8".into(),
            ignore_eos: Some("on".into()),
            seed: "42".into(),
            warmup_requests: "3".into(),
            request_timeout_s: "12.5".into(),
            ..d
        });
    }

    #[test]
    fn a_native_max_batch_fills_its_field_and_none_leaves_it_to_the_engine() {
        let native = RunForm { target_kind: "native".into(), ..RunForm::default() };
        let mut spec = native.to_spec().unwrap();
        fn max_batch(spec: &mut RunSpec) -> &mut Option<u32> {
            match &mut spec.target {
                Target::Native(n) => &mut n.max_batch,
                _ => panic!("native"),
            }
        }
        assert_eq!(*max_batch(&mut spec), None, "blank by default: the engine's own");
        assert_eq!(RunForm::from_spec(&spec).unwrap().max_batch, "");
        *max_batch(&mut spec) = Some(8);
        assert_eq!(RunForm::from_spec(&spec).unwrap().max_batch, "8", "a stored number keeps its value");
        let bad = RunForm { max_batch: "0".into(), ..native };
        assert_eq!(
            bad.to_spec().unwrap_err().for_field("target.max_batch"),
            Some("must be between 1 and 1024")
        );
    }

    #[test]
    fn a_stored_rate_sweep_run_fills_its_one_rate() {
        let f = RunForm { request_rate: "1, 4".into(), ..RunForm::default() };
        let runs = f.to_specs().unwrap()[0].expand();
        let back = RunForm::from_spec(&runs[1]).unwrap();
        assert_eq!((back.request_rate.as_str(), back.arrival.as_str()), ("4", "poisson"));
        let mut spec = runs[1].clone();
        spec.goodput = Goodput { ttft_ms: Some(100.0), tpot_ms: None, e2el_ms: None };
        spec.ramp_up = None;
        assert_eq!(RunForm::from_spec(&spec).unwrap().goodput_ttft_ms, "100");
    }

    #[test]
    fn what_the_form_cannot_set_is_named() {
        let mut spec = RunForm::default().to_spec().unwrap();
        spec.sampling.extra_body = Some(serde_json::json!({"x": 1}));
        assert_eq!(
            RunForm::from_spec(&spec).unwrap_err(),
            "the form has no input for its sampling.extra_body"
        );
        spec.sampling.extra_body = None;
        spec.time_limit_s = Some(60.0);
        assert!(RunForm::from_spec(&spec).unwrap_err().contains("time_limit_s"));
        spec.time_limit_s = None;
        spec.ramp_up = Some(RampUp { strategy: RampUpStrategy::Linear, start_rps: 1, end_rps: 2 });
        RunForm::from_spec(&spec).unwrap();
        let imported: RunSpec = serde_json::from_value(serde_json::json!({
            "target": {"kind": "imported", "engine": "vLLM", "source": "x.txt"}, "model": "m", "num_prompts": 1,
            "dataset": {"kind": "sharegpt"}, "load": {}
        }))
        .unwrap();
        assert!(RunForm::from_spec(&imported).unwrap_err().contains("imported"));
    }
}
