//! Engines latlab launches itself from typed options: vLLM, SGLang, TensorRT-LLM.
//!
//! This file owns the options and their validation. `render` turns valid options into an
//! argv that the worker spawns without a shell; `presets` holds the seed study's commands.
//! Every string that reaches an argv is checked here, so the browser (wasm) and the server
//! refuse the same bad input with the same words before anything is started.

mod extra_args;
mod presets;
mod render;
#[cfg(test)]
mod tests;

pub use extra_args::allowed_flags;
pub use presets::seed_presets;
pub use render::RenderedCommand;

use crate::validate::ValidationErrors;
use serde::{Deserialize, Serialize};

/// One engine server to start, as typed options. Anything without a typed field goes in
/// `extra_args`, which is validated flag by flag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchedTarget {
    pub engine: LaunchedEngine,
    /// Hugging Face id, or an absolute path under the worker's configured folders, passed
    /// to the engine. A pre-quantized checkpoint (e.g. `Qwen/Qwen3-8B-FP8`, as the seed
    /// study uses) goes here too.
    pub model: String,
    /// How the model is spelled on the command line (SGLang accepts two spellings).
    #[serde(default)]
    pub model_flag: ModelFlag,
    /// Quantize an unquantized checkpoint on load (`--quantization`). Leave empty for a
    /// checkpoint that is already quantized.
    #[serde(default)]
    pub quantization: Option<LaunchQuantization>,
    #[serde(default)]
    pub speculative: Option<Speculative>,
    #[serde(default)]
    pub attention_backend: Option<AttentionBackend>,
    /// Largest batch (requests per decode step) captured in a CUDA graph. SGLang
    /// `--cuda-graph-max-bs`, TensorRT-LLM `cuda_graph_config.max_batch_size`; vLLM counts
    /// tokens, so it gets an explicit capture list up to this times (1 + draft tokens).
    #[serde(default)]
    pub cuda_graph_max_bs: Option<u32>,
    /// Turn torch.compile on where the engine leaves it off (SGLang, TensorRT-LLM).
    #[serde(default)]
    pub torch_compile: bool,
    /// Further engine flags, one word per entry: `["--mem-fraction-static", "0.8"]`. Only
    /// flags that tune performance are accepted (`extra_args::allowed_flags`); the program
    /// itself is never the request's to choose: each worker's operator configures it.
    #[serde(default)]
    pub extra_args: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchedEngine {
    Vllm,
    Sglang,
    TrtLlm,
}

impl LaunchedEngine {
    pub fn as_str(self) -> &'static str {
        match self {
            LaunchedEngine::Vllm => "vllm",
            LaunchedEngine::Sglang => "sglang",
            LaunchedEngine::TrtLlm => "trtllm",
        }
    }

    /// The port the engine listens on when no `--port` is given.
    pub fn default_port(self) -> u16 {
        match self {
            LaunchedEngine::Vllm | LaunchedEngine::TrtLlm => 8000,
            LaunchedEngine::Sglang => 30000,
        }
    }
}

/// The model's spelling on the command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelFlag {
    /// `vllm serve MODEL`, `--model-path MODEL` (SGLang), `trtllm-serve MODEL`.
    #[default]
    Default,
    /// `--model MODEL`: SGLang's alias, as the seed study's recommended command spells it.
    Model,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchQuantization {
    /// `--quantization fp8`: FP8 weights quantized when the model loads.
    Fp8,
}

/// Speculative decoding with a draft model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Speculative {
    pub algorithm: SpeculativeAlgorithm,
    /// Draft model path or Hugging Face id.
    pub draft_model: String,
    /// Draft depth (SGLang `--speculative-num-steps`, vLLM `num_speculative_tokens`,
    /// TensorRT-LLM `max_draft_len`). Empty: the engine's default (SGLang only).
    #[serde(default)]
    pub num_steps: Option<u32>,
    /// Branching per step (SGLang `--speculative-eagle-topk`).
    #[serde(default)]
    pub topk: Option<u32>,
    /// Tokens verified per step (SGLang `--speculative-num-draft-tokens`).
    #[serde(default)]
    pub num_draft_tokens: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpeculativeAlgorithm {
    Eagle,
    Eagle3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionBackend {
    Flashinfer,
    Triton,
    /// FlashAttention 3 (SGLang `fa3`; vLLM's `FLASH_ATTN` picks FA3 on Hopper).
    Fa3,
    /// TensorRT-LLM's own kernels.
    Trtllm,
}

/// Bounds far beyond any sensible launch but tight enough to catch a typo.
pub mod limits {
    pub const MAX_SPEC_STEPS: u32 = 32;
    pub const MAX_SPEC_TOPK: u32 = 32;
    pub const MAX_DRAFT_TOKENS: u32 = 1_024;
    pub const MAX_CUDA_GRAPH_BS: u32 = 1_024;
    pub const MAX_EXTRA_ARGS: usize = 64;
    pub const MAX_ARG_LEN: usize = 512;
}

/// Characters a shell would act on. Nothing here is spawned through a shell, but the
/// command is shown for copying into one, and none of these belong in a model id or flag.
const SHELL_METACHARACTERS: &str = "`$;|&<>\"'\\*?!{}()[]#~";

impl LaunchedTarget {
    /// Checks every option, reporting each problem under `target.<field>`.
    pub fn validate_into(&self, e: &mut ValidationErrors) {
        use limits::*;
        let engine = self.engine;
        let name = engine_name(engine);
        check_model_ref(e, "target.model", &self.model);
        if self.model_flag == ModelFlag::Model && engine != LaunchedEngine::Sglang {
            e.push(
                "target.model_flag",
                format!("'--model' is SGLang's spelling; {name} takes the model as its first argument"),
            );
        }
        if self.quantization.is_some() && engine == LaunchedEngine::TrtLlm {
            e.push("target.quantization", "TensorRT-LLM reads quantization from the checkpoint; use a pre-quantized model such as Qwen/Qwen3-8B-FP8");
        }
        if let Some(s) = &self.speculative {
            s.validate_into(engine, e);
        }
        if let Some(b) =
            self.attention_backend.filter(|&b| render::attention_backend_name(engine, b).is_none())
        {
            e.push("target.attention_backend", format!("{name} has no {} attention backend", b.label()));
        }
        if let Some(bs) = self.cuda_graph_max_bs {
            check_range(e, "target.cuda_graph_max_bs", bs, MAX_CUDA_GRAPH_BS);
        }
        if self.torch_compile && engine == LaunchedEngine::Vllm {
            e.push(
                "target.torch_compile",
                "vLLM already compiles with torch.compile by default; leave this off",
            );
        }
        let owns_compilation_config = engine == LaunchedEngine::Vllm && self.cuda_graph_max_bs.is_some();
        extra_args::check(e, engine, owns_compilation_config, &self.extra_args);
    }
}

impl Speculative {
    fn validate_into(&self, engine: LaunchedEngine, e: &mut ValidationErrors) {
        use limits::*;
        check_model_ref(e, "target.speculative.draft_model", &self.draft_model);
        let numbers = [
            ("target.speculative.num_steps", self.num_steps, MAX_SPEC_STEPS),
            ("target.speculative.topk", self.topk, MAX_SPEC_TOPK),
            ("target.speculative.num_draft_tokens", self.num_draft_tokens, MAX_DRAFT_TOKENS),
        ];
        for (field, value, max) in numbers {
            if let Some(v) = value {
                check_range(e, field, v, max);
            }
        }
        if engine == LaunchedEngine::Sglang {
            return;
        }
        // vLLM and TensorRT-LLM draft a single chain whose length is num_steps.
        let name = engine_name(engine);
        if self.num_steps.is_none() {
            e.push(
                "target.speculative.num_steps",
                format!("{name} needs the number of draft tokens per step"),
            );
        }
        if self.topk.is_some() {
            e.push("target.speculative.topk", format!("{name} drafts a single chain; leave topk empty"));
        }
        if self.num_draft_tokens.is_some() {
            e.push(
                "target.speculative.num_draft_tokens",
                format!("{name} drafts num_steps tokens; leave num_draft_tokens empty"),
            );
        }
        if engine == LaunchedEngine::TrtLlm && self.algorithm == SpeculativeAlgorithm::Eagle {
            e.push(
                "target.speculative.algorithm",
                "TensorRT-LLM's PyTorch backend supports EAGLE-3 only; use eagle3",
            );
        }
    }
}

impl AttentionBackend {
    fn label(self) -> &'static str {
        match self {
            AttentionBackend::Flashinfer => "flashinfer",
            AttentionBackend::Triton => "triton",
            AttentionBackend::Fa3 => "fa3",
            AttentionBackend::Trtllm => "trtllm",
        }
    }
}

pub(crate) fn engine_name(engine: LaunchedEngine) -> &'static str {
    match engine {
        LaunchedEngine::Vllm => "vLLM",
        LaunchedEngine::Sglang => "SGLang",
        LaunchedEngine::TrtLlm => "TensorRT-LLM",
    }
}

fn check_range(e: &mut ValidationErrors, field: &str, v: u32, max: u32) {
    if v == 0 || v > max {
        e.push(field, format!("must be between 1 and {max}"));
    }
}

/// The first problem that keeps `s` from being one argv word: empty, too long, spaces,
/// control, bidirectional or shell characters.
fn word_problem(s: &str) -> Option<String> {
    if s.is_empty() {
        return Some("must not be empty".into());
    }
    if s.len() > limits::MAX_ARG_LEN {
        return Some(format!("must be at most {} characters", limits::MAX_ARG_LEN));
    }
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Some(format!("must not contain control characters ({c:?})"));
    }
    if let Some(c) = crate::text::forbidden_char(s) {
        return Some(format!("must not contain {}", crate::text::describe(c)));
    }
    if s.chars().any(char::is_whitespace) {
        return Some("must not contain spaces".into());
    }
    if let Some(c) = s.chars().find(|c| SHELL_METACHARACTERS.contains(*c)) {
        return Some(format!("must not contain {c:?}"));
    }
    None
}

/// A model for a launched engine: a Hugging Face id (`org/name`), or an absolute path that
/// the worker resolves under its configured folders. Relative paths are refused: an engine
/// would read them from its working directory, and they look like ids.
fn check_model_ref(e: &mut ValidationErrors, field: &str, s: &str) {
    if let Some(problem) = word_problem(s) {
        e.push(field, problem);
    } else if s.starts_with('-') {
        e.push(field, "must not start with '-'");
    } else if s.starts_with('/') {
        if let Some(problem) = crate::validate::path_problem(s) {
            e.push(field, problem);
        }
    } else if !is_hf_id(s) {
        e.push(
            field,
            "must be a Hugging Face model id (org/name) or an absolute path under the worker's model folders",
        );
    }
}

/// `Qwen/Qwen3-8B-FP8`, `gpt2`: Hugging Face's repository id grammar (letters, digits,
/// `-`, `_`, `.`; at most one `/`; no `..`, no leading or trailing `.` or `-`).
fn is_hf_id(s: &str) -> bool {
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 96
            && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && !p.starts_with(['.', '-'])
            && !p.ends_with(['.', '-'])
            && !p.contains("..")
    };
    match s.split_once('/') {
        Some((org, name)) => part_ok(org) && part_ok(name),
        None => part_ok(s),
    }
}

/// `--max-num-seqs=8` -> `max-num-seqs` (underscores read as dashes, as argparse and
/// click treat them); `-tp` -> `tp`. `None` when the word is not a well-formed flag.
fn flag_name(arg: &str) -> Option<String> {
    let (body, long) = match arg.strip_prefix("--") {
        Some(b) => (b, true),
        None => (&arg[1..], false),
    };
    let name = if long { body.split('=').next().unwrap_or("") } else { body };
    let ok = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.ends_with(['-', '_', '.']);
    ok.then(|| name.replace('_', "-").to_ascii_lowercase())
}
