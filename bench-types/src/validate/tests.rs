//! `RunSpec::validate` and the spec's serde form: bad fields named, old specs read the same.

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
    assert_eq!(s.validate().unwrap_err().for_field("load.max_concurrency"), Some("values must not repeat"));
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
    assert_eq!(s.dataset, Dataset::Random { input_len: 4, output_len: 2, range_ratio: 0.0, prefix_len: 0 });
    assert!(s.sends_ignore_eos(), "vLLM sends ignore_eos with the random dataset");
    let back = serde_json::to_value(&s).unwrap();
    for absent in ["ramp_up", "disable_shuffle", "no_oversample"] {
        assert!(back.get(absent).is_none(), "{absent} written although unset: {back}");
    }
    assert!(back["dataset"].get("prefix_len").is_none() && back["sampling"].get("top_p").is_none(), "{back}");
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
