//! The form's translation to a `RunSpec`, field by field.

use super::*;
use bench_types::{Dataset, Quantization, RampUp, RampUpStrategy, Target};

#[test]
fn the_default_form_is_a_valid_spec() {
    let spec = RunForm::default().to_spec().unwrap();
    assert_eq!(spec.num_prompts, 100);
    assert_eq!(spec.load.max_concurrency, vec![1]);
    assert_eq!(spec.sampling.temperature, Some(0.0));
}

#[test]
fn a_sweep_list_parses_and_bad_numbers_name_their_field() {
    let mut f = RunForm { max_concurrency: "1, 2,4,8".into(), ..RunForm::default() };
    assert_eq!(f.to_spec().unwrap().load.max_concurrency, vec![1, 2, 4, 8]);
    f.max_concurrency = "1,two".into();
    f.num_prompts = "-5".into();
    f.request_rate = "fast".into();
    let e = f.to_spec().unwrap_err();
    assert!(e.for_field("load.max_concurrency").unwrap().contains("\"two\""));
    assert_eq!(e.for_field("num_prompts").unwrap(), "-5 is negative; use a positive whole number");
    assert!(e.for_field("load.request_rate").is_some());
    // Every bad value of a list is named, not only the first.
    f.max_concurrency = "0, abc, 99999999999".into();
    let m = f.to_spec().unwrap_err().for_field("load.max_concurrency").unwrap().to_string();
    assert!(
        m.contains("0 is out of range")
            && m.contains("\"abc\" is not a whole number")
            && m.contains("99999999999 is too large"),
        "{m}"
    );
}

#[test]
fn the_native_engine_is_named_after_its_model_source_unless_named() {
    let f = RunForm { target_kind: "native".into(), ..RunForm::default() };
    assert_eq!(f.to_spec().unwrap().model, "random:tiny");
    let named = RunForm { model: "mine".into(), ..f.clone() };
    assert_eq!(named.to_spec().unwrap().model, "mine");
    let ckpt = RunForm { model_source: "/srv/models/Qwen3-8B/".into(), ..f };
    assert_eq!(ckpt.to_spec().unwrap().model, "Qwen3-8B");
    assert_eq!(
        RunForm::default().to_spec().unwrap().model,
        "Qwen/Qwen3-8B",
        "external targets keep the field"
    );
}

#[test]
fn validation_errors_come_through_once_per_field() {
    let f = RunForm { num_prompts: "0".into(), base_url: "localhost:8000".into(), ..RunForm::default() };
    let e = f.to_spec().unwrap_err();
    assert_eq!(e.for_field("num_prompts"), Some("must be between 1 and 100000"));
    assert_eq!(e.for_field("target.base_url"), Some("must start with http:// or https://"));
    assert_eq!(e.0.len(), 2);
}

#[test]
fn launched_presets_make_one_spec_each_with_their_served_model() {
    let f = RunForm {
        target_kind: "launched".into(),
        presets: "vllm-bf16, recommended".into(),
        label: "ladder".into(),
        ..RunForm::default()
    };
    let specs = f.to_specs().unwrap();
    assert_eq!(specs.len(), 2);
    assert!(matches!(&specs[0].target, Target::Launched(l) if l.engine.as_str() == "vllm"));
    assert_eq!(specs[0].model, "Qwen/Qwen3-8B");
    assert_eq!(specs[1].model, "Qwen/Qwen3-8B-FP8", "requests name the model the engine serves");
    assert_eq!(specs[1].label, "ladder · recommended");
    assert_eq!(f.launch_preview()[0], "vllm-bf16: vllm serve Qwen/Qwen3-8B");
    let bad = RunForm { presets: "vllm-bf16, warp".into(), ..f.clone() };
    assert!(
        bad.to_specs().unwrap_err().for_field("target.presets").unwrap().contains("unknown preset \"warp\"")
    );
    let none = RunForm { presets: " ".into(), ..f };
    assert!(none.to_specs().is_err());
}

#[test]
fn native_and_random_dataset_forms() {
    let f = RunForm {
        target_kind: "native".into(),
        dataset_kind: "random".into(),
        input_len: "232".into(),
        output_len: "220".into(),
        ignore_eos: Some("on".into()),
        ..RunForm::default()
    };
    let s = f.to_spec().unwrap();
    assert!(
        matches!(s.target, Target::Native(ref n) if n.model_source == "random:tiny" && n.max_batch.is_none())
    );
    assert_eq!(
        s.dataset,
        Dataset::Random { input_len: 232, output_len: 220, range_ratio: 0.0, prefix_len: 0 }
    );
    assert!(s.sampling.ignore_eos);
    let unticked = RunForm { ignore_eos: None, prefix_len: "64".into(), ..f.clone() }.to_spec().unwrap();
    assert!(unticked.sampling.ignore_eos, "the random dataset always sends ignore_eos, as vLLM does");
    assert!(matches!(unticked.dataset, Dataset::Random { prefix_len: 64, .. }));
    assert!(!RunForm::default().to_spec().unwrap().sampling.ignore_eos, "ShareGPT only when ticked");
    assert!(
        matches!(s.target, Target::Native(ref n) if n.quantization == Quantization::None),
        "bf16 unless asked"
    );
}

#[test]
fn sampling_parameters_are_sent_only_when_filled_in_and_checked() {
    assert_eq!(
        RunForm::default().to_spec().unwrap().sampling.parameters(),
        vec![("temperature", serde_json::json!(0.0))]
    );
    let f = RunForm {
        top_p: "0.95".into(),
        top_k: "-1".into(),
        min_p: "0.05".into(),
        repetition_penalty: "1.1".into(),
        ..RunForm::default()
    };
    assert!(f.has_sampling_parameters());
    let s = f.to_spec().unwrap().sampling;
    assert_eq!(
        (s.top_p, s.top_k, s.min_p, s.repetition_penalty, s.presence_penalty),
        (Some(0.95), Some(-1), Some(0.05), Some(1.1), None)
    );
    let bad = RunForm {
        top_p: "1.5".into(),
        top_k: "five".into(),
        frequency_penalty: "3".into(),
        ..RunForm::default()
    };
    let e = bad.to_spec().unwrap_err();
    assert_eq!(e.for_field("sampling.top_p"), Some("must be above 0 and at most 1"));
    assert_eq!(e.for_field("sampling.top_k"), Some("\"five\" is not a whole number"));
    assert_eq!(e.for_field("sampling.frequency_penalty"), Some("must be between -2 and 2"));
}

#[test]
fn a_ramp_up_replaces_the_fixed_rate() {
    let f = RunForm {
        ramp_up_strategy: "exponential".into(),
        ramp_up_start_rps: "2".into(),
        ramp_up_end_rps: "32".into(),
        ..RunForm::default()
    };
    let s = f.to_spec().unwrap();
    assert_eq!(s.ramp_up, Some(RampUp { strategy: RampUpStrategy::Exponential, start_rps: 2, end_rps: 32 }));
    assert_eq!(s.load_label(), "BS=1 ramp=2-32/s");
    let e = RunForm { request_rate: "5".into(), ramp_up_end_rps: String::new(), ..f }.to_spec().unwrap_err();
    assert!(e.for_field("load.request_rate").unwrap().contains("ramp"), "{e}");
    assert_eq!(e.for_field("ramp_up.end_rps"), Some("is required"));
    assert_eq!(
        RunForm::default().to_spec().unwrap().ramp_up,
        None,
        "a fixed rate unless a strategy is chosen"
    );
}

#[test]
fn native_weights_choose_the_quantization() {
    let native = RunForm { target_kind: "native".into(), ..RunForm::default() };
    let quant = |f: &RunForm| match f.to_spec().unwrap().target {
        Target::Native(n) => n.quantization,
        t => panic!("not native: {t:?}"),
    };
    assert_eq!(quant(&native), Quantization::None);
    assert_eq!(quant(&RunForm { quantization: String::new(), ..native.clone() }), Quantization::None);
    assert_eq!(quant(&RunForm { quantization: "fp8".into(), ..native.clone() }), Quantization::Fp8);
    // FP8 on the CPU device is allowed: the reference backend dequantizes (slowly).
    assert_eq!(
        quant(&RunForm { quantization: "fp8".into(), device: "cpu".into(), ..native.clone() }),
        Quantization::Fp8
    );
    let bad = RunForm { quantization: "int4".into(), ..native };
    assert!(bad.to_spec().unwrap_err().for_field("target.quantization").unwrap().contains("\"int4\""));
}

#[test]
fn native_speculation_fills_in_the_random_draft_and_names_bad_fields() {
    let f = RunForm { target_kind: "native".into(), speculative: Some("on".into()), ..RunForm::default() };
    let Target::Native(n) = f.to_spec().unwrap().target else { panic!("not native") };
    let s = n.speculative.unwrap();
    assert_eq!(s.draft_model, "random:tiny-eagle3");
    assert_eq!(
        (s.num_steps, s.topk, s.num_draft_tokens),
        (None, None, None),
        "empty = the engine's defaults"
    );
    let bad = RunForm {
        spec_num_steps: "x".into(),
        spec_topk: "2".into(),
        spec_num_draft_tokens: "9".into(),
        draft_model: "random:qwen3-8b-eagle3".into(),
        ..f.clone()
    };
    let e = bad.to_spec().unwrap_err();
    assert_eq!(e.for_field("target.speculative.num_steps"), Some("\"x\" is not a whole number"));
    assert!(e.for_field("target.speculative.draft_model").unwrap().contains("random:tiny-eagle3"), "{e}");
    // With the default 3 steps, topk 2 holds 1 + 2 + 2 * 4 = 11 nodes: 9 fits.
    assert!(e.for_field("target.speculative.num_draft_tokens").is_none(), "{e}");
    let over = RunForm { spec_topk: "2".into(), spec_num_draft_tokens: "12".into(), ..f.clone() };
    assert!(
        over.to_spec()
            .unwrap_err()
            .for_field("target.speculative.num_draft_tokens")
            .unwrap()
            .contains("(11,")
    );
    let unticked = RunForm { speculative: None, spec_topk: "99".into(), ..f };
    assert!(matches!(unticked.to_spec().unwrap().target, Target::Native(n) if n.speculative.is_none()));
}

#[test]
fn the_native_ladder_makes_one_labelled_run_per_rung_at_one_concurrency() {
    let f = RunForm {
        target_kind: "native".into(),
        model_source: "random:qwen3-8b".into(),
        native_ladder: Some("on".into()),
        ..RunForm::default()
    };
    assert!(f.is_native_ladder());
    let specs = f.to_specs().unwrap();
    let labels: Vec<&str> = specs.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "native ladder · bf16",
            "native ladder · FP8",
            "native ladder · FP8 + EAGLE-3 tree 4/4/16",
            "native ladder · FP8 + EAGLE-3 chain 3/1/4"
        ]
    );
    let Target::Native(n) = &specs[2].target else { panic!() };
    assert_eq!(n.speculative.as_ref().unwrap().draft_model, "random:qwen3-8b-eagle3");
    assert!(specs.iter().all(|s| s.model == "random:qwen3-8b"), "one served name for every rung");
    let sweep = RunForm { max_concurrency: "1,4".into(), ..f.clone() };
    assert!(
        sweep.to_specs().unwrap_err().for_field("load.max_concurrency").unwrap().contains("one concurrency")
    );
    let ckpt = RunForm { model_source: "/srv/models/Qwen3-8B".into(), ..f };
    assert!(ckpt.to_specs().unwrap_err().for_field("target.speculative.draft_model").is_some());
}
