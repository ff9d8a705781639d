//! Presets against the seed study's printed commands, word for word.

use super::*;

/// The study wraps long commands with `\` + newline + indentation; a shell reads that as
/// one space, so the rendered one-line command is compared with the joined text.
fn one_line(doc: &str) -> String {
    doc.split("\\\n").map(str::trim).collect::<Vec<_>>().join(" ")
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
