//! The server commands of the seed study (Qwen3-8B on one H100), as typed options.
//! `tests.rs` checks that each renders to the command the study prints.

use super::{AttentionBackend, LaunchedEngine, LaunchedTarget, ModelFlag, Speculative, SpeculativeAlgorithm};

const BF16: &str = "Qwen/Qwen3-8B";
const FP8: &str = "Qwen/Qwen3-8B-FP8";
const TENGYUNW: &str = "Tengyunw/qwen3_8b_eagle3";
const ANGELSLIM: &str = "AngelSlim/Qwen3-8B_eagle3";

fn plain(engine: LaunchedEngine, model: &str) -> LaunchedTarget {
    LaunchedTarget {
        engine,
        model: model.to_string(),
        model_flag: ModelFlag::Default,
        quantization: None,
        speculative: None,
        attention_backend: None,
        cuda_graph_max_bs: None,
        torch_compile: false,
        extra_args: vec![],
    }
}

fn eagle3(
    draft: &str,
    steps: Option<u32>,
    topk: Option<u32>,
    draft_tokens: Option<u32>,
) -> Option<Speculative> {
    Some(Speculative {
        algorithm: SpeculativeAlgorithm::Eagle3,
        draft_model: draft.to_string(),
        num_steps: steps,
        topk,
        num_draft_tokens: draft_tokens,
    })
}

/// SGLang on the FP8 checkpoint with EAGLE-3: the study's section 5 sweep.
fn sglang_fp8_eagle3(
    draft: &str,
    steps: Option<u32>,
    topk: Option<u32>,
    draft_tokens: Option<u32>,
) -> LaunchedTarget {
    LaunchedTarget {
        speculative: eagle3(draft, steps, topk, draft_tokens),
        ..plain(LaunchedEngine::Sglang, FP8)
    }
}

/// Every server command in the seed study, by name, in the study's order.
pub fn seed_presets() -> Vec<(&'static str, LaunchedTarget)> {
    use LaunchedEngine::*;
    let (s4, k4, d16) = (Some(4), Some(4), Some(16));
    vec![
        // 1. Engine choice (also the baseline of the batch-size sweep).
        ("vllm-bf16", plain(Vllm, BF16)),
        ("sglang-bf16", plain(Sglang, BF16)),
        ("trtllm-bf16", plain(TrtLlm, BF16)),
        // 2. CUDA graph max batch size.
        ("sglang-bf16-cuda-graph-bs8", LaunchedTarget { cuda_graph_max_bs: Some(8), ..plain(Sglang, BF16) }),
        // 3. Quantization: the pre-quantized FP8 checkpoint.
        ("sglang-fp8", plain(Sglang, FP8)),
        // 4. Attention backend.
        (
            "sglang-fp8-triton",
            LaunchedTarget { attention_backend: Some(AttentionBackend::Triton), ..plain(Sglang, FP8) },
        ),
        (
            "sglang-fp8-flashinfer",
            LaunchedTarget { attention_backend: Some(AttentionBackend::Flashinfer), ..plain(Sglang, FP8) },
        ),
        // 5. Speculative decoding: the chosen setting, then each variant the study measured.
        ("sglang-fp8-eagle3", sglang_fp8_eagle3(TENGYUNW, s4, k4, d16)),
        ("sglang-fp8-eagle3-angelslim", sglang_fp8_eagle3(ANGELSLIM, s4, k4, d16)),
        ("sglang-fp8-eagle3-steps2", sglang_fp8_eagle3(TENGYUNW, Some(2), k4, d16)),
        ("sglang-fp8-eagle3-steps8", sglang_fp8_eagle3(TENGYUNW, Some(8), k4, d16)),
        ("sglang-fp8-eagle3-topk8", sglang_fp8_eagle3(TENGYUNW, s4, Some(8), d16)),
        ("sglang-fp8-eagle3-draft32", sglang_fp8_eagle3(TENGYUNW, s4, k4, Some(32))),
        ("sglang-fp8-eagle3-draft8", sglang_fp8_eagle3(TENGYUNW, s4, k4, Some(8))),
        ("sglang-fp8-eagle3-chain2", sglang_fp8_eagle3(TENGYUNW, Some(2), Some(1), Some(4))),
        ("sglang-fp8-eagle3-engine-defaults", sglang_fp8_eagle3(TENGYUNW, None, None, None)),
        // 6. torch.compile on top of the chosen setting.
        (
            "sglang-fp8-eagle3-torch-compile",
            LaunchedTarget { torch_compile: true, ..sglang_fp8_eagle3(TENGYUNW, s4, k4, d16) },
        ),
        // The recommendation, spelled with `--model` as the study prints it.
        (
            "recommended",
            LaunchedTarget { model_flag: ModelFlag::Model, ..sglang_fp8_eagle3(TENGYUNW, s4, k4, d16) },
        ),
    ]
}
