//! Bad options refused, each naming its field: numbers out of range, unknown options,
//! shell and control characters, extra arguments that are not performance flags, options
//! an engine lacks.

use super::*;
use crate::spec::{RunSpec, Target};

#[test]
fn zero_and_huge_numbers_are_named() {
    let mut t = preset("sglang-fp8-eagle3");
    t.cuda_graph_max_bs = Some(0);
    let s = t.speculative.as_mut().unwrap();
    s.num_steps = Some(0);
    s.topk = Some(1_000);
    s.num_draft_tokens = Some(u32::MAX);
    let e = errors(&t);
    for f in [
        "target.cuda_graph_max_bs",
        "target.speculative.num_steps",
        "target.speculative.topk",
        "target.speculative.num_draft_tokens",
    ] {
        assert!(e.for_field(f).is_some_and(|m| m.starts_with("must be between 1 and")), "{f}: {e}");
    }
    assert_eq!(e.0.len(), 4, "{e}");
    // Nothing to start: the worker's entry point refuses.
    assert!(t.command(Some(8000), "/cfg").is_err());
}

#[test]
fn negative_unknown_and_misspelled_options_fail_to_parse() {
    let good = serde_json::to_value(preset("sglang-fp8-eagle3")).unwrap();
    let parse = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        edit(&mut v);
        serde_json::from_value::<LaunchedTarget>(v).unwrap_err().to_string()
    };
    assert!(parse(&|v| v["speculative"]["num_steps"] = (-4).into()).contains("-4"));
    assert!(parse(&|v| v["cuda_graph_max_bs"] = 1e12.into()).contains("invalid type"));
    assert!(parse(&|v| v["attention_backend"] = "magic".into()).contains("unknown variant `magic`"));
    assert!(parse(&|v| v["speculative"]["algorithm"] = "medusa".into()).contains("unknown variant `medusa`"));
    assert!(parse(&|v| v["engine"] = "tgi".into()).contains("unknown variant `tgi`"));
    assert!(parse(&|v| v["speculative"]["top_k"] = 4.into()).contains("top_k"));
    assert!(parse(&|v| v["port"] = 8000.into()).contains("unknown field `port`"));
    // Optional fields may be left out.
    let t: LaunchedTarget = serde_json::from_str(r#"{"engine": "vllm", "model": "Qwen/Qwen3-8B"}"#).unwrap();
    assert_eq!(t, preset("vllm-bf16"));
    assert_eq!(serde_json::from_value::<LaunchedTarget>(good).unwrap(), preset("sglang-fp8-eagle3"));
}

#[test]
fn shell_and_control_characters_are_refused_in_every_string() {
    for bad in
        ["Qwen/Qwen3-8B;rm -rf /", "$(id)", "a`b`", "x|y", "a&b", "a>b", "a\nb", "a\u{7}b", "a b", "-h", ""]
    {
        let mut t = preset("sglang-fp8-eagle3");
        t.model = bad.into();
        t.speculative.as_mut().unwrap().draft_model = bad.into();
        t.extra_args = vec!["--served-model-name".into(), bad.into()];
        let e = errors(&t);
        for f in ["target.model", "target.speculative.draft_model"] {
            assert!(e.for_field(f).is_some(), "{bad:?} accepted in {f}: {e}");
        }
        if !bad.starts_with('-') {
            assert!(e.for_field("target.extra_args").is_some(), "{bad:?} accepted in extra_args: {e}");
        }
        assert!(t.command(None, "/cfg").is_err());
    }
    let mut t = preset("vllm-bf16");
    t.model = "Qwen/Qwen3-8B;reboot".into();
    assert_eq!(message(&t, "target.model"), "must not contain ';'");
}

#[test]
fn extra_args_must_be_flags_that_no_typed_field_sets() {
    let cases: &[(LaunchedEngine, &[&str], &str)] = &[
        (LaunchedEngine::Sglang, &["--port", "8001"], "is set by the worker"),
        (LaunchedEngine::Sglang, &["--host=0.0.0.0"], "is set by the worker"),
        (LaunchedEngine::Sglang, &["--cuda_graph_max_bs", "4"], "is set by target.cuda_graph_max_bs"),
        (LaunchedEngine::Sglang, &["--cuda-graph-max", "4"], "is set by target.cuda_graph_max_bs"),
        (LaunchedEngine::Sglang, &["--speculative-eagle-topk", "2"], "is set by target.speculative"),
        (LaunchedEngine::Sglang, &["--enable-torch-compile"], "is set by target.torch_compile"),
        (LaunchedEngine::Vllm, &["-q", "fp8"], "is set by target.quantization"),
        (LaunchedEngine::Vllm, &["--model", "x"], "is set by target.model"),
        (LaunchedEngine::TrtLlm, &["--extra_llm_api_options", "/tmp/x.yaml"], "latlab's generated config"),
        (LaunchedEngine::Sglang, &["8", "--mem-fraction-static"], "is not a flag"),
        (LaunchedEngine::Sglang, &["---x"], "is not a flag"),
        (LaunchedEngine::Sglang, &["--"], "is not a flag"),
        (LaunchedEngine::Sglang, &["-"], "is not a flag"),
        (LaunchedEngine::Sglang, &["--=1"], "is not a flag"),
        (LaunchedEngine::Sglang, &["--log-level=info", "debug"], "is not a flag"),
        (LaunchedEngine::Sglang, &["--mem-fraction-static 0.8"], "one word per entry"),
    ];
    for (engine, args, expected) in cases {
        let mut t = plain_for(*engine);
        t.extra_args = args.iter().map(|a| a.to_string()).collect();
        let m = message(&t, "target.extra_args");
        assert!(m.contains(expected), "{args:?}: {m}");
    }
    let mut t = plain_for(LaunchedEngine::Sglang);
    t.extra_args = vec!["x".into(); limits::MAX_EXTRA_ARGS + 1];
    assert_eq!(message(&t, "target.extra_args"), "at most 64 entries");
    // Values may look negative; lists take several values; `=` joins a value.
    t.extra_args =
        ["--chunked-prefill-size", "-1", "--cuda-graph-bs", "1", "2", "4", "--tp-size=1", "--enable-metrics"]
            .map(String::from)
            .to_vec();
    assert!(errors(&t).is_empty(), "{}", errors(&t));
    let mut v = plain_for(LaunchedEngine::Vllm);
    v.extra_args =
        ["-tp", "2", "--max-num-seqs", "8", "--gpu-memory-utilization=0.9", "--no-enable-prefix-caching"]
            .map(String::from)
            .to_vec();
    assert!(errors(&v).is_empty(), "{}", errors(&v));
}

/// Flags that reach code or files: what an attacker would pass. None is on any allow-list,
/// and neither are their argparse abbreviations.
#[test]
fn extra_args_refuse_every_flag_that_is_not_a_performance_option() {
    let cases: &[(LaunchedEngine, &[&str])] = &[
        (LaunchedEngine::Vllm, &["--trust-remote-code"]),
        (LaunchedEngine::Vllm, &["--trust-remote"]),
        (LaunchedEngine::Vllm, &["--chat-template", "/etc/shadow"]),
        (LaunchedEngine::Vllm, &["--allowed-local-media-path", "/"]),
        (LaunchedEngine::Vllm, &["--tokenizer", "/tmp/evil"]),
        (LaunchedEngine::Vllm, &["--worker-extension-cls", "evil.Mod"]),
        (LaunchedEngine::Vllm, &["--download-dir=/etc"]),
        (LaunchedEngine::Vllm, &["--tp", "2"]),
        (LaunchedEngine::Sglang, &["--trust-remote-code"]),
        (LaunchedEngine::Sglang, &["--chat-template", "/etc/shadow"]),
        (LaunchedEngine::Sglang, &["--speculative-token-map", "/etc/shadow"]),
        (LaunchedEngine::TrtLlm, &["--trust_remote_code"]),
        (LaunchedEngine::TrtLlm, &["--tokenizer", "/tmp/evil"]),
    ];
    for (engine, args) in cases {
        let mut t = plain_for(*engine);
        t.extra_args = args.iter().map(|a| a.to_string()).collect();
        let m = message(&t, "target.extra_args");
        assert!(m.contains("is not among the") && m.contains("may only tune performance"), "{args:?}: {m}");
        assert!(t.command(Some(1), "/cfg").is_err(), "{args:?} rendered");
    }
    // Allowed flags with values out of range or off their list.
    let bad_values: &[(LaunchedEngine, &[&str], &str)] = &[
        (LaunchedEngine::Sglang, &["--mem-fraction-static", "2"], "at most 1"),
        (LaunchedEngine::Sglang, &["--mem-fraction-static"], "needs a value"),
        (LaunchedEngine::Sglang, &["--cuda-graph-bs"], "needs at least one value"),
        (LaunchedEngine::Sglang, &["--cuda-graph-bs", "1", "x"], "\"x\": must be a whole number"),
        (LaunchedEngine::Sglang, &["--disable-radix-cache=1"], "takes no value"),
        (LaunchedEngine::Vllm, &["--dtype", "evil"], "must be one of"),
        (LaunchedEngine::Vllm, &["--max-num-seqs", "0"], "whole number"),
        (LaunchedEngine::Vllm, &["--load-format", "pt"], "must be one of"),
        (LaunchedEngine::Vllm, &["--served-model-name", "a:b"], "letters, digits"),
    ];
    for (engine, args, expected) in bad_values {
        let mut t = plain_for(*engine);
        t.extra_args = args.iter().map(|a| a.to_string()).collect();
        let m = message(&t, "target.extra_args");
        assert!(m.contains(expected), "{args:?}: {m}");
    }
    assert!(allowed_flags(LaunchedEngine::Vllm).contains(&"-O3".to_string()));
    assert!(allowed_flags(LaunchedEngine::Vllm).contains(&"-tp".to_string()));
    assert!(allowed_flags(LaunchedEngine::Sglang).contains(&"--mem-fraction-static".to_string()));
}

#[test]
fn models_are_hugging_face_ids_or_absolute_paths() {
    for good in ["Qwen/Qwen3-8B-FP8", "gpt2", "AngelSlim/Qwen3-8B_eagle3", "/srv/models/qwen3-8b"] {
        let mut t = preset("vllm-bf16");
        t.model = good.into();
        assert!(errors(&t).is_empty(), "{good}: {}", errors(&t));
    }
    for bad in ["./x", "../x", "a/b/c", ".hidden/x", "/srv/../etc", "x/", "~/models", "Qwen/-x"] {
        let mut t = preset("vllm-bf16");
        t.model = bad.into();
        assert!(errors(&t).for_field("target.model").is_some(), "{bad} accepted");
    }
}

fn plain_for(engine: LaunchedEngine) -> LaunchedTarget {
    LaunchedTarget { engine, ..preset("sglang-bf16") }
}

#[test]
fn options_an_engine_lacks_are_refused_with_the_reason() {
    let mut t = preset("trtllm-bf16");
    t.quantization = Some(LaunchQuantization::Fp8);
    assert!(message(&t, "target.quantization").contains("pre-quantized"));
    t = preset("trtllm-bf16");
    t.attention_backend = Some(AttentionBackend::Triton);
    assert_eq!(message(&t, "target.attention_backend"), "TensorRT-LLM has no triton attention backend");
    t.speculative = preset("sglang-fp8-eagle3").speculative;
    assert!(message(&t, "target.speculative.topk").contains("single chain"));
    assert!(errors(&t).for_field("target.speculative.num_draft_tokens").is_some());

    let mut v = preset("vllm-bf16");
    v.torch_compile = true;
    v.model_flag = ModelFlag::Model;
    v.speculative = preset("sglang-fp8-eagle3-engine-defaults").speculative;
    let e = errors(&v);
    assert!(e.for_field("target.torch_compile").is_some(), "{e}");
    assert!(e.for_field("target.model_flag").is_some(), "{e}");
    assert!(e.for_field("target.speculative.num_steps").unwrap().contains("needs"), "{e}");
}

#[test]
fn run_spec_validation_reaches_the_launched_options() {
    let json = serde_json::json!({
        "target": {"kind": "launched", "engine": "sglang", "model": "Qwen/Qwen3-8B-FP8", "extra_args": ["--port", "1"]},
        "model": "Qwen/Qwen3-8B-FP8",
        "dataset": {"kind": "sharegpt"},
        "num_prompts": 100,
        "load": {"max_concurrency": [4]},
    });
    let spec: RunSpec = serde_json::from_value(json).unwrap();
    assert!(matches!(spec.target, Target::Launched(_)));
    assert_eq!(spec.target_description(), "sglang Qwen/Qwen3-8B-FP8");
    let e = spec.validate().unwrap_err();
    assert_eq!(
        e.for_field("target.extra_args"),
        Some("\"--port\" is set by the worker (it picks host and port); remove it from the extra arguments")
    );
}
