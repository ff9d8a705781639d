//! Valid options -> the program, argv, environment and config files the worker starts.
//! Pure: nothing here touches the file system or spawns anything.
//!
//! Flag spellings follow the engine versions of the seed study: vLLM v0.11.0, SGLang
//! v0.5.3.post3, TensorRT-LLM v1.2.0rc1. FLAGS.md lists every flag and key rendered here,
//! the source each was checked against, and what differs in other versions. Typed options come out in one fixed order
//! (model, quantization, torch.compile, speculative, attention, CUDA graphs, host/port,
//! extra arguments), which is the order the seed study prints them in.

use super::{
    AttentionBackend, LaunchQuantization, LaunchedEngine, LaunchedTarget, ModelFlag, SpeculativeAlgorithm,
};
use crate::validate::ValidationErrors;

/// What the worker starts: the engine's program with `args` (no shell), `env` added to its
/// environment, and each of `files` written under the config folder first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedCommand {
    /// The engine's conventional launcher (`vllm`, `python3`, `trtllm-serve`), as shown in
    /// the UI. The worker runs the executable its operator configured for the engine
    /// instead: a request never chooses the program.
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// (path relative to the config folder, content).
    pub files: Vec<(String, String)>,
}

/// TensorRT-LLM's options without a flag go in this file under the worker's config folder.
pub const TRTLLM_CONFIG_FILE: &str = "extra_llm_api_options.yaml";

/// Where the server listens when the worker picks the port: loopback only.
pub const LAUNCH_HOST: &str = "127.0.0.1";

impl RenderedCommand {
    /// The command as one shell line, quoted so that pasting it into a shell runs exactly
    /// this argv. Shown in the UI; never executed by latlab.
    pub fn display(&self) -> String {
        let env = self.env.iter().map(|(k, v)| format!("{k}={}", shell_quote(v)));
        let argv = std::iter::once(&self.program).chain(&self.args).map(|a| shell_quote(a));
        env.chain(argv).collect::<Vec<_>>().join(" ")
    }
}

impl LaunchedTarget {
    /// Validates, then renders: the worker's entry point, so bad options start nothing.
    pub fn command(&self, port: Option<u16>, config_dir: &str) -> Result<RenderedCommand, ValidationErrors> {
        let mut e = ValidationErrors::default();
        self.validate_into(&mut e);
        e.into_result().map(|()| self.render(port, config_dir))
    }

    /// The command for these options. `port: None` leaves host and port to the engine's
    /// defaults (the seed study's commands); `Some(p)` adds `--host 127.0.0.1 --port p`.
    /// `config_dir` is where the worker writes `files` (TensorRT-LLM only). Expects
    /// options that passed `validate_into`.
    pub fn render(&self, port: Option<u16>, config_dir: &str) -> RenderedCommand {
        let mut cmd = match self.engine {
            LaunchedEngine::Vllm => self.render_vllm(),
            LaunchedEngine::Sglang => self.render_sglang(),
            LaunchedEngine::TrtLlm => self.render_trtllm(config_dir),
        };
        if let Some(p) = port {
            cmd.args.extend([
                "--host".to_string(),
                LAUNCH_HOST.to_string(),
                "--port".to_string(),
                p.to_string(),
            ]);
        }
        cmd.args.extend(self.extra_args.iter().cloned());
        cmd
    }

    fn render_vllm(&self) -> RenderedCommand {
        let mut args = vec!["serve".to_string(), self.model.clone()];
        if let Some(LaunchQuantization::Fp8) = self.quantization {
            push(&mut args, "--quantization", "fp8");
        }
        if let Some(s) = &self.speculative {
            let method = match s.algorithm {
                SpeculativeAlgorithm::Eagle => "eagle",
                SpeculativeAlgorithm::Eagle3 => "eagle3",
            };
            let config = serde_json::json!({
                "method": method,
                "model": s.draft_model,
                "num_speculative_tokens": s.num_steps,
            });
            push(&mut args, "--speculative-config", &config.to_string());
        }
        // An explicit capture list through `--compilation-config`, which every vLLM from
        // v0.11.0 on reads the same way. `--cuda-graph-sizes N` does not: v0.11.0 reads one
        // value as "[1, 2, 4] + multiples of 8 up to N", v0.11.1 and v0.12 read it as the
        // list `[N]` (deprecated alias of `--cudagraph-capture-sizes`), v0.13 removed it.
        // vLLM counts capture sizes in tokens: a decode step of B requests with k draft
        // tokens each is B * (1 + k) tokens. See FLAGS.md.
        if let Some(bs) = self.cuda_graph_max_bs {
            let tokens_per_request = 1 + self.speculative.as_ref().and_then(|s| s.num_steps).unwrap_or(0);
            let config =
                serde_json::json!({ "cudagraph_capture_sizes": vllm_capture_sizes(bs * tokens_per_request) });
            push(&mut args, "--compilation-config", &config.to_string());
        }
        // v0.11 chooses the attention backend from the environment only (`--attention-backend`
        // came later and the variable was deprecated; see FLAGS.md).
        let env = match self.attention_backend.and_then(|b| attention_backend_name(self.engine, b)) {
            Some(b) => vec![("VLLM_ATTENTION_BACKEND".to_string(), b.to_string())],
            None => vec![],
        };
        RenderedCommand { program: "vllm".to_string(), args, env, files: vec![] }
    }

    fn render_sglang(&self) -> RenderedCommand {
        let mut args = vec!["-m".to_string(), "sglang.launch_server".to_string()];
        let model_flag = match self.model_flag {
            ModelFlag::Default => "--model-path",
            ModelFlag::Model => "--model",
        };
        push(&mut args, model_flag, &self.model);
        if let Some(LaunchQuantization::Fp8) = self.quantization {
            push(&mut args, "--quantization", "fp8");
        }
        if self.torch_compile {
            args.push("--enable-torch-compile".to_string());
        }
        if let Some(s) = &self.speculative {
            let algorithm = match s.algorithm {
                SpeculativeAlgorithm::Eagle => "EAGLE",
                SpeculativeAlgorithm::Eagle3 => "EAGLE3",
            };
            push(&mut args, "--speculative-algorithm", algorithm);
            push(&mut args, "--speculative-draft-model-path", &s.draft_model);
            let numbers = [
                ("--speculative-num-steps", s.num_steps),
                ("--speculative-eagle-topk", s.topk),
                ("--speculative-num-draft-tokens", s.num_draft_tokens),
            ];
            for (flag, value) in numbers {
                if let Some(v) = value {
                    push(&mut args, flag, &v.to_string());
                }
            }
        }
        if let Some(b) = self.attention_backend.and_then(|b| attention_backend_name(self.engine, b)) {
            push(&mut args, "--attention-backend", b);
        }
        if let Some(bs) = self.cuda_graph_max_bs {
            push(&mut args, "--cuda-graph-max-bs", &bs.to_string());
        }
        RenderedCommand { program: "python3".to_string(), args, env: vec![], files: vec![] }
    }

    fn render_trtllm(&self, config_dir: &str) -> RenderedCommand {
        let mut args = vec![self.model.clone()];
        let yaml = self.trtllm_yaml();
        let mut files = vec![];
        if !yaml.is_empty() {
            let dir = config_dir.trim_end_matches('/');
            push(&mut args, "--extra_llm_api_options", &format!("{dir}/{TRTLLM_CONFIG_FILE}"));
            files.push((TRTLLM_CONFIG_FILE.to_string(), yaml));
        }
        RenderedCommand { program: "trtllm-serve".to_string(), args, env: vec![], files }
    }

    /// TensorRT-LLM's LLM-API options for what has no `trtllm-serve` flag; empty when
    /// there is nothing to say (then no file is written and no flag added).
    fn trtllm_yaml(&self) -> String {
        let mut y = String::new();
        if let Some(b) = self.attention_backend.and_then(|b| attention_backend_name(self.engine, b)) {
            y += &format!("attn_backend: {b}\n");
        }
        if let Some(bs) = self.cuda_graph_max_bs {
            y += &format!("cuda_graph_config:\n  max_batch_size: {bs}\n");
        }
        if self.torch_compile {
            y += "torch_compile_config:\n  enable_fullgraph: true\n";
        }
        if let Some(s) = &self.speculative {
            // The PyTorch backend's "Eagle" decoding is EAGLE-3 (validation refuses EAGLE-2).
            // Strings are written as JSON strings, which YAML reads unchanged.
            let dir = serde_json::Value::String(s.draft_model.clone());
            y += "speculative_config:\n  decoding_type: Eagle\n";
            if let Some(n) = s.num_steps {
                y += &format!("  max_draft_len: {n}\n");
            }
            y += &format!("  speculative_model_dir: {dir}\n");
        }
        y
    }
}

/// vLLM's CUDA graph capture sizes up to `max` tokens: 1, 2, 4, then every multiple of 8
/// (vLLM v0.11.0's own pattern for one `--cuda-graph-sizes` value), then `max` itself so
/// that the largest size is exactly `max`.
pub(super) fn vllm_capture_sizes(max: u32) -> Vec<u32> {
    let mut sizes: Vec<u32> =
        [1, 2, 4].into_iter().chain((8..=max).step_by(8)).filter(|&s| s <= max).collect();
    if sizes.last() != Some(&max) {
        sizes.push(max);
    }
    sizes
}

fn push(args: &mut Vec<String>, flag: &str, value: &str) {
    args.push(flag.to_string());
    args.push(value.to_string());
}

/// The engine's name for an attention backend, or `None` where it has none.
pub(super) fn attention_backend_name(engine: LaunchedEngine, b: AttentionBackend) -> Option<&'static str> {
    use AttentionBackend::*;
    use LaunchedEngine::*;
    match (engine, b) {
        (Sglang, Flashinfer) => Some("flashinfer"),
        (Sglang, Triton) => Some("triton"),
        (Sglang, Fa3) => Some("fa3"),
        (Vllm, Flashinfer) => Some("FLASHINFER"),
        (Vllm, Triton) => Some("TRITON_ATTN"),
        (Vllm, Fa3) => Some("FLASH_ATTN"),
        (TrtLlm, Flashinfer) => Some("FLASHINFER"),
        (TrtLlm, Trtllm) => Some("TRTLLM"),
        _ => None,
    }
}

/// Who sets a flag already, if anyone: extra arguments must not set it a second time.
/// `name` is normalised by `flag_name` (no dashes in front, `_` read as `-`).
pub(super) fn owned_flag(engine: LaunchedEngine, name: &str) -> Option<&'static str> {
    const WORKER: &str = "the worker (it picks host and port)";
    let owned: &[(&str, &str)] = match engine {
        LaunchedEngine::Vllm => &[
            ("model", "target.model"),
            ("quantization", "target.quantization"),
            ("q", "target.quantization"),
            ("speculative-config", "target.speculative"),
            ("cuda-graph-sizes", "target.cuda_graph_max_bs"),
            ("cudagraph-capture-sizes", "target.cuda_graph_max_bs"),
            ("max-cudagraph-capture-size", "target.cuda_graph_max_bs"),
            ("attention-backend", "target.attention_backend"),
        ],
        LaunchedEngine::Sglang => &[
            ("model-path", "target.model"),
            ("model", "target.model"),
            ("quantization", "target.quantization"),
            ("enable-torch-compile", "target.torch_compile"),
            ("speculative-algorithm", "target.speculative"),
            ("speculative-draft-model-path", "target.speculative"),
            ("speculative-num-steps", "target.speculative"),
            ("speculative-eagle-topk", "target.speculative"),
            ("speculative-num-draft-tokens", "target.speculative"),
            ("attention-backend", "target.attention_backend"),
            ("cuda-graph-max-bs", "target.cuda_graph_max_bs"),
        ],
        LaunchedEngine::TrtLlm => &[
            ("extra-llm-api-options", "latlab's generated config (use the typed fields)"),
            ("config", "latlab's generated config (use the typed fields)"),
        ],
    };
    if name == "host" || name == "port" {
        return Some(WORKER);
    }
    // argparse expands an unambiguous prefix (`--cuda-graph-max` is `--cuda-graph-max-bs`),
    // so a prefix of an owned flag counts as that flag.
    let hit = |full: &str| full == name || (name.len() >= 3 && full.starts_with(name));
    if hit("host") || hit("port") {
        return Some(WORKER);
    }
    owned.iter().find(|(flag, _)| hit(flag)).map(|(_, owner)| *owner)
}

/// POSIX single quoting where needed; words made only of safe characters stay bare.
fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:=,+@%^".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
