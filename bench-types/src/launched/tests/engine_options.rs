//! Typed options rendered as each engine's flags, environment and config files.

use super::*;

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
    use crate::launched::render::vllm_capture_sizes;
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
