//! Presets against the seed study's printed commands; bad options refused by name.

use super::*;
use crate::spec::{RunSpec, Target};

/// The study wraps long commands with `\` + newline + indentation; a shell reads that as
/// one space, so the rendered one-line command is compared with the joined text.
fn one_line(doc: &str) -> String {
    doc.split("\\\n").map(str::trim).collect::<Vec<_>>().join(" ")
}

fn preset(name: &str) -> LaunchedTarget {
    seed_presets().into_iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("no preset {name}")).1
}

fn shown(name: &str) -> String {
    preset(name).render(None, "/cfg").display()
}

/// (preset, command exactly as printed in qwen3-8b-h100-latency.txt).
const PRINTED: &[(&str, &str)] = &[
    // 1. engine choice, and the batch-size sweep's baseline.
    ("vllm-bf16", "vllm serve Qwen/Qwen3-8B"),
    ("sglang-bf16", "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B"),
    ("trtllm-bf16", "trtllm-serve Qwen/Qwen3-8B"),
    // 2.
    (
        "sglang-bf16-cuda-graph-bs8",
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --cuda-graph-max-bs 8",
    ),
    // 3.
    ("sglang-fp8", "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8"),
    // 4.
    (
        "sglang-fp8-triton",
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8 --attention-backend triton",
    ),
    // 5.
    (
        "sglang-fp8-eagle3",
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8 \\
    --speculative-algorithm EAGLE3 \\
    --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 \\
    --speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16",
    ),
    // 6.
    (
        "sglang-fp8-eagle3-torch-compile",
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8 \\
  --enable-torch-compile \\
  --speculative-algorithm EAGLE3 \\
  --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 \\
  --speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16",
    ),
    // Conclusion (printed twice, with 4- and 2-space indentation; same words).
    (
        "recommended",
        "python3 -m sglang.launch_server \\
    --model Qwen/Qwen3-8B-FP8 \\
    --speculative-algorithm EAGLE3 \\
    --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 \\
    --speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16",
    ),
];

/// Section 5 prints each variant as a comment with only the speculative flags; they are
/// added to section 5's base command.
const SECTION5_BASE: &str = "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8";
const SECTION5_VARIANTS: &[(&str, &str)] = &[
    (
        "sglang-fp8-eagle3",
        "# --speculative-algorithm EAGLE3 --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 --speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16",
    ),
    (
        "sglang-fp8-eagle3-angelslim",
        "# --speculative-algorithm EAGLE3 --speculative-draft-model-path AngelSlim/Qwen3-8B_eagle3 --speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16",
    ),
    (
        "sglang-fp8-eagle3-steps2",
        "# --speculative-algorithm EAGLE3 --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 --speculative-num-steps 2 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16",
    ),
    (
        "sglang-fp8-eagle3-steps8",
        "# --speculative-algorithm EAGLE3 --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 --speculative-num-steps 8 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16",
    ),
    (
        "sglang-fp8-eagle3-topk8",
        "# --speculative-algorithm EAGLE3 --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 --speculative-num-steps 4 --speculative-eagle-topk 8 --speculative-num-draft-tokens 16",
    ),
    (
        "sglang-fp8-eagle3-draft32",
        "# --speculative-algorithm EAGLE3 --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 --speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 32",
    ),
    (
        "sglang-fp8-eagle3-draft8",
        "# --speculative-algorithm EAGLE3 --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 --speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 8",
    ),
    (
        "sglang-fp8-eagle3-chain2",
        "# --speculative-algorithm EAGLE3 --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 --speculative-num-steps 2 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
    ),
    (
        "sglang-fp8-eagle3-engine-defaults",
        "# --speculative-algorithm EAGLE3 --speculative-draft-model-path Tengyunw/qwen3_8b_eagle3",
    ),
];

#[test]
fn printed_commands_render_exactly() {
    for (name, doc) in PRINTED {
        let cmd = preset(name).render(None, "/cfg");
        assert_eq!(cmd.display(), one_line(doc), "preset {name}");
        // The same words as an argv, and nothing else to set up.
        let words: Vec<&str> = doc.split_whitespace().filter(|w| *w != "\\").collect();
        let argv: Vec<&str> =
            std::iter::once(cmd.program.as_str()).chain(cmd.args.iter().map(String::as_str)).collect();
        assert_eq!(argv, words, "preset {name}");
        assert!(cmd.env.is_empty() && cmd.files.is_empty(), "preset {name}");
    }
}

#[test]
fn section5_variants_render_exactly() {
    for (name, comment) in SECTION5_VARIANTS {
        let flags = comment.strip_prefix("# ").unwrap();
        assert_eq!(shown(name), format!("{SECTION5_BASE} {flags}"), "preset {name}");
    }
}

#[test]
fn flashinfer_variant_differs_from_triton_only_in_the_backend() {
    // The study prints only "# flashinfer" above this result; the command is section 4's
    // with the other backend.
    assert_eq!(shown("sglang-fp8-flashinfer"), shown("sglang-fp8-triton").replace("triton", "flashinfer"));
}

#[test]
fn every_preset_is_listed_once_valid_and_covered_by_a_test() {
    let presets = seed_presets();
    let tested: Vec<&str> =
        PRINTED.iter().chain(SECTION5_VARIANTS).map(|(n, _)| *n).chain(["sglang-fp8-flashinfer"]).collect();
    for (i, (name, target)) in presets.iter().enumerate() {
        assert!(presets[..i].iter().all(|(n, _)| n != name), "{name} listed twice");
        assert!(tested.contains(name), "{name} has no rendering test");
        let mut e = ValidationErrors::default();
        target.validate_into(&mut e);
        assert!(e.is_empty(), "{name}: {e}");
    }
}

#[test]
fn the_worker_port_is_added_on_loopback_only_when_given() {
    let t = preset("sglang-fp8");
    assert!(!shown("sglang-fp8").contains("--port"));
    let cmd = t.command(Some(31234), "/cfg").unwrap();
    assert_eq!(
        cmd.display(),
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B-FP8 --host 127.0.0.1 --port 31234"
    );
    assert_eq!(LaunchedEngine::Sglang.default_port(), 30000);
    assert_eq!(LaunchedEngine::Vllm.default_port(), 8000);
}

#[test]
fn extra_args_come_last_and_the_program_is_the_engines_own_name() {
    let mut t = preset("sglang-fp8");
    t.extra_args = vec![
        "--mem-fraction-static".into(),
        "0.8".into(),
        "--max_running_requests=8".into(),
        "--disable-radix-cache".into(),
    ];
    let cmd = t.command(Some(9000), "/cfg").unwrap();
    // What actually runs is the worker's configured executable for SGLang; the rendered
    // command names only the conventional launcher.
    assert_eq!(cmd.program, "python3");
    assert_eq!(
        cmd.args[cmd.args.len() - 8..],
        [
            "--host",
            "127.0.0.1",
            "--port",
            "9000",
            "--mem-fraction-static",
            "0.8",
            "--max_running_requests=8",
            "--disable-radix-cache"
        ]
    );
}

#[test]
fn vllm_options_render_as_its_flags_and_environment() {
    let t = LaunchedTarget {
        quantization: Some(LaunchQuantization::Fp8),
        speculative: Some(Speculative {
            algorithm: SpeculativeAlgorithm::Eagle3,
            draft_model: "Tengyunw/qwen3_8b_eagle3".into(),
            num_steps: Some(3),
            topk: None,
            num_draft_tokens: None,
        }),
        attention_backend: Some(AttentionBackend::Flashinfer),
        cuda_graph_max_bs: Some(8),
        extra_args: vec!["--max-num-seqs".into(), "8".into()],
        ..preset("vllm-bf16")
    };
    let cmd = t.command(None, "/cfg").unwrap();
    // 8 requests x (1 + 3 draft tokens) = 32 tokens per decode step: vLLM counts tokens.
    assert_eq!(
        cmd.display(),
        "VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve Qwen/Qwen3-8B --quantization fp8 --speculative-config \
         '{\"method\":\"eagle3\",\"model\":\"Tengyunw/qwen3_8b_eagle3\",\"num_speculative_tokens\":3}' \
         --compilation-config '{\"cudagraph_capture_sizes\":[1,2,4,8,16,24,32]}' --max-num-seqs 8"
    );
    // The argv carries the JSON unquoted: no shell in between.
    assert_eq!(
        cmd.args[5],
        r#"{"method":"eagle3","model":"Tengyunw/qwen3_8b_eagle3","num_speculative_tokens":3}"#
    );
    assert_eq!(cmd.args[6..8], ["--compilation-config", r#"{"cudagraph_capture_sizes":[1,2,4,8,16,24,32]}"#]);
    assert!(cmd.files.is_empty());
}

#[test]
fn vllm_each_typed_option_alone() {
    let render = |edit: &dyn Fn(&mut LaunchedTarget)| {
        let mut t = preset("vllm-bf16");
        edit(&mut t);
        let cmd = t.command(None, "/cfg").unwrap();
        (cmd.env, cmd.args)
    };
    let argv = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    assert_eq!(
        render(&|t| t.quantization = Some(LaunchQuantization::Fp8)).1,
        argv(&["serve", "Qwen/Qwen3-8B", "--quantization", "fp8"])
    );
    // EAGLE-1 draft: method "eagle"; EAGLE-3: "eagle3" (vLLM SpeculativeConfig.method).
    let eagle = |t: &mut LaunchedTarget| {
        t.speculative = Some(Speculative {
            algorithm: SpeculativeAlgorithm::Eagle,
            draft_model: "yuhuili/EAGLE-LLaMA3.1-Instruct-8B".into(),
            num_steps: Some(5),
            topk: None,
            num_draft_tokens: None,
        })
    };
    assert_eq!(
        render(&eagle).1,
        argv(&[
            "serve",
            "Qwen/Qwen3-8B",
            "--speculative-config",
            r#"{"method":"eagle","model":"yuhuili/EAGLE-LLaMA3.1-Instruct-8B","num_speculative_tokens":5}"#
        ])
    );
    // Without speculation the capture list ends at the batch size itself.
    assert_eq!(
        render(&|t| t.cuda_graph_max_bs = Some(8)).1[2..],
        argv(&["--compilation-config", r#"{"cudagraph_capture_sizes":[1,2,4,8]}"#])
    );
    assert_eq!(render(&|t| t.cuda_graph_max_bs = Some(1)).1[3], r#"{"cudagraph_capture_sizes":[1]}"#);
    // Attention backends are _Backend enum names in VLLM_ATTENTION_BACKEND; argv unchanged.
    for (b, name) in [
        (AttentionBackend::Flashinfer, "FLASHINFER"),
        (AttentionBackend::Triton, "TRITON_ATTN"),
        (AttentionBackend::Fa3, "FLASH_ATTN"),
    ] {
        let (env, args) = render(&|t| t.attention_backend = Some(b));
        assert_eq!(env, vec![("VLLM_ATTENTION_BACKEND".to_string(), name.to_string())]);
        assert_eq!(args, argv(&["serve", "Qwen/Qwen3-8B"]));
    }
    let mut t = preset("vllm-bf16");
    t.attention_backend = Some(AttentionBackend::Trtllm);
    assert_eq!(message(&t, "target.attention_backend"), "vLLM has no trtllm attention backend");
}

#[test]
fn vllm_capture_sizes_follow_the_v0_11_pattern_and_end_at_the_maximum() {
    use super::render::vllm_capture_sizes;
    assert_eq!(vllm_capture_sizes(1), [1]);
    assert_eq!(vllm_capture_sizes(2), [1, 2]);
    assert_eq!(vllm_capture_sizes(3), [1, 2, 3]);
    assert_eq!(vllm_capture_sizes(4), [1, 2, 4]);
    assert_eq!(vllm_capture_sizes(6), [1, 2, 4, 6]);
    assert_eq!(vllm_capture_sizes(8), [1, 2, 4, 8]);
    assert_eq!(vllm_capture_sizes(20), [1, 2, 4, 8, 16, 20]);
    assert_eq!(vllm_capture_sizes(32), [1, 2, 4, 8, 16, 24, 32]);
    // The limits' worst case (1024 requests x 33 tokens) stays well inside u32.
    let big = vllm_capture_sizes(limits::MAX_CUDA_GRAPH_BS * (1 + limits::MAX_SPEC_STEPS));
    assert_eq!(big.last(), Some(&33_792));
    assert!(big.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn vllm_compilation_config_is_not_overridden_by_extra_args() {
    let mut t = preset("vllm-bf16");
    t.cuda_graph_max_bs = Some(8);
    for extra in [
        &["-O0"][..],
        &["-O", "3"],
        &["-O.level", "0"],
        &["--compilation-config.level", "0"],
        &["--compilation_config.level", "0"],
        &["--cudagraph-capture-sizes", "1", "2"],
        &["--cuda-graph-sizes", "8"],
    ] {
        t.extra_args = extra.iter().map(|a| a.to_string()).collect();
        let m = message(&t, "target.extra_args");
        assert!(m.contains("target.cuda_graph_max_bs"), "{extra:?}: {m}");
    }
    // Without the typed field a compilation level is the user's; a raw compilation
    // config (JSON, dotted keys) is not on the allow-list.
    t.cuda_graph_max_bs = None;
    for extra in [&["-O0"][..], &["-O3"]] {
        t.extra_args = extra.iter().map(|a| a.to_string()).collect();
        assert!(errors(&t).is_empty(), "{extra:?}: {}", errors(&t));
    }
    t.extra_args = vec!["--compilation-config.level".into(), "0".into()];
    assert!(message(&t, "target.extra_args").contains("is not among the vLLM flags"));
}

#[test]
fn sglang_each_typed_option_renders_its_flag() {
    let t = LaunchedTarget {
        quantization: Some(LaunchQuantization::Fp8),
        torch_compile: true,
        speculative: Some(Speculative {
            algorithm: SpeculativeAlgorithm::Eagle,
            draft_model: "lmsys/sglang-EAGLE-LLaMA3-Instruct-8B".into(),
            num_steps: Some(3),
            topk: Some(1),
            num_draft_tokens: Some(4),
        }),
        attention_backend: Some(AttentionBackend::Fa3),
        cuda_graph_max_bs: Some(16),
        ..preset("sglang-bf16")
    };
    assert_eq!(
        t.command(None, "/cfg").unwrap().display(),
        "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --quantization fp8 --enable-torch-compile \
         --speculative-algorithm EAGLE --speculative-draft-model-path lmsys/sglang-EAGLE-LLaMA3-Instruct-8B \
         --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 \
         --attention-backend fa3 --cuda-graph-max-bs 16"
    );
    let mut t = preset("sglang-bf16");
    t.attention_backend = Some(AttentionBackend::Trtllm);
    assert_eq!(message(&t, "target.attention_backend"), "SGLang has no trtllm attention backend");
    // The draft model's short alias is a prefix of the owned flag.
    t = preset("sglang-bf16");
    t.extra_args = vec!["--speculative-draft-model".into(), "x/y".into()];
    assert!(message(&t, "target.extra_args").contains("target.speculative"));
}

#[test]
fn trtllm_options_go_to_a_yaml_file_in_the_config_dir() {
    assert!(preset("trtllm-bf16").render(Some(8123), "/cfg").files.is_empty());
    let t = LaunchedTarget {
        model: "Qwen/Qwen3-8B-FP8".into(),
        speculative: Some(Speculative {
            algorithm: SpeculativeAlgorithm::Eagle3,
            draft_model: "Tengyunw/qwen3_8b_eagle3".into(),
            num_steps: Some(4),
            topk: None,
            num_draft_tokens: None,
        }),
        attention_backend: Some(AttentionBackend::Flashinfer),
        cuda_graph_max_bs: Some(8),
        torch_compile: true,
        ..preset("trtllm-bf16")
    };
    let cmd = t.command(Some(8123), "/scratch/run-7/").unwrap();
    assert_eq!(
        cmd.display(),
        "trtllm-serve Qwen/Qwen3-8B-FP8 --extra_llm_api_options /scratch/run-7/extra_llm_api_options.yaml --host 127.0.0.1 --port 8123"
    );
    let expected_yaml = "attn_backend: FLASHINFER
cuda_graph_config:
  max_batch_size: 8
torch_compile_config:
  enable_fullgraph: true
speculative_config:
  decoding_type: Eagle
  max_draft_len: 4
  speculative_model_dir: \"Tengyunw/qwen3_8b_eagle3\"
";
    assert_eq!(cmd.files, vec![("extra_llm_api_options.yaml".to_string(), expected_yaml.to_string())]);
}

#[test]
fn trtllm_each_typed_option_alone_is_one_yaml_key() {
    let yaml = |edit: &dyn Fn(&mut LaunchedTarget)| {
        let mut t = preset("trtllm-bf16");
        edit(&mut t);
        let cmd = t.command(None, "/cfg").unwrap();
        assert_eq!(cmd.args, ["Qwen/Qwen3-8B", "--extra_llm_api_options", "/cfg/extra_llm_api_options.yaml"]);
        assert!(cmd.env.is_empty());
        cmd.files[0].1.clone()
    };
    assert_eq!(yaml(&|t| t.attention_backend = Some(AttentionBackend::Trtllm)), "attn_backend: TRTLLM\n");
    assert_eq!(
        yaml(&|t| t.attention_backend = Some(AttentionBackend::Flashinfer)),
        "attn_backend: FLASHINFER\n"
    );
    assert_eq!(yaml(&|t| t.cuda_graph_max_bs = Some(4)), "cuda_graph_config:\n  max_batch_size: 4\n");
    assert_eq!(yaml(&|t| t.torch_compile = true), "torch_compile_config:\n  enable_fullgraph: true\n");
    assert_eq!(
        yaml(&|t| t.speculative = preset("sglang-fp8-eagle3").speculative.map(|s| Speculative {
            topk: None,
            num_draft_tokens: None,
            ..s
        })),
        "speculative_config:\n  decoding_type: Eagle\n  max_draft_len: 4\n  speculative_model_dir: \"Tengyunw/qwen3_8b_eagle3\"\n"
    );
    let mut t = preset("trtllm-bf16");
    t.attention_backend = Some(AttentionBackend::Fa3);
    assert_eq!(message(&t, "target.attention_backend"), "TensorRT-LLM has no fa3 attention backend");
    t.attention_backend = None;
    t.speculative = preset("sglang-fp8-eagle3").speculative.map(|s| Speculative {
        algorithm: SpeculativeAlgorithm::Eagle,
        topk: None,
        num_draft_tokens: None,
        ..s
    });
    assert!(message(&t, "target.speculative.algorithm").contains("EAGLE-3 only"));
    // `--config` is the newer spelling of `--extra_llm_api_options`; both are latlab's.
    t = preset("trtllm-bf16");
    t.extra_args = vec!["--config".into(), "/tmp/x.yaml".into()];
    assert!(message(&t, "target.extra_args").contains("latlab's generated config"));
}

#[test]
fn display_quotes_what_a_shell_would_split_or_expand() {
    let cmd = RenderedCommand {
        program: "/opt/my engine/python3".into(),
        args: vec!["it's".into(), "".into(), "$HOME".into(), "a=b,c".into()],
        env: vec![("X".into(), "1 2".into())],
        files: vec![],
    };
    assert_eq!(cmd.display(), r#"X='1 2' '/opt/my engine/python3' 'it'\''s' '' '$HOME' a=b,c"#);
}

fn errors(t: &LaunchedTarget) -> ValidationErrors {
    let mut e = ValidationErrors::default();
    t.validate_into(&mut e);
    e
}

fn message(t: &LaunchedTarget, field: &str) -> String {
    let e = errors(t);
    e.for_field(field).unwrap_or_else(|| panic!("no error for {field}: {e}")).to_string()
}

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
