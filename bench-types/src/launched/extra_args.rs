//! `extra_args` as an allow-list: per engine, the flags that change only how fast the
//! engine serves (batching, memory, parallelism, caching, graphs, scheduling, logging),
//! each with the values it takes. Anything that reaches code or files (`--trust-remote-code`,
//! `--chat-template`, `--allowed-local-media-path`, `--tokenizer`, plugins, download dirs)
//! is not on the list, so a request can never make a launched engine run code or read a
//! file the typed fields do not name.
//!
//! Flag names are those of the seed study's versions (vLLM v0.11.0, SGLang v0.5.3.post3,
//! TensorRT-LLM v1.2.0rc1; FLAGS.md). argparse expands unambiguous prefixes, so only exact
//! names are accepted: `--trust-remote` is not a prefix of anything allowed, and an allowed
//! name is never expanded into another flag.

use super::{LaunchedEngine, flag_name, render, word_problem};
use crate::validate::ValidationErrors;

/// What follows a flag.
#[derive(Debug, Clone, Copy)]
enum Takes {
    /// A switch: no value.
    Nothing,
    /// A whole number in `[min, max]`.
    Int(i64, i64),
    /// A number in `(min, max]` (fractions of memory and the like).
    Fraction(f64, f64),
    /// One of these words.
    Choice(&'static [&'static str]),
    /// One or more whole numbers in `[min, max]` (SGLang `--cuda-graph-bs 1 2 4 8`).
    Ints(i64, i64),
    /// A name made of letters, digits and `._/-` (a served model name).
    Name,
}

const COUNT: Takes = Takes::Int(1, 1 << 20);
const TOKENS: Takes = Takes::Int(1, 1 << 24);
const GPUS: Takes = Takes::Int(1, 64);
const FRACTION: Takes = Takes::Fraction(0.0, 1.0);
const SEED: Takes = Takes::Int(0, u32::MAX as i64);

const VLLM: &[(&str, Takes)] = &[
    ("max-num-seqs", COUNT),
    ("max-num-batched-tokens", TOKENS),
    ("max-model-len", TOKENS),
    ("max-seq-len-to-capture", TOKENS),
    ("gpu-memory-utilization", FRACTION),
    ("swap-space", Takes::Fraction(-1.0, 1024.0)),
    ("cpu-offload-gb", Takes::Fraction(-1.0, 4096.0)),
    ("tensor-parallel-size", GPUS),
    ("tp", GPUS),
    ("pipeline-parallel-size", GPUS),
    ("pp", GPUS),
    ("data-parallel-size", GPUS),
    ("dp", GPUS),
    ("dtype", Takes::Choice(&["auto", "half", "float16", "bfloat16", "float", "float32"])),
    ("kv-cache-dtype", Takes::Choice(&["auto", "fp8", "fp8_e4m3", "fp8_e5m2"])),
    ("block-size", Takes::Choice(&["8", "16", "32", "64", "128"])),
    ("enable-chunked-prefill", Takes::Nothing),
    ("no-enable-chunked-prefill", Takes::Nothing),
    ("enable-prefix-caching", Takes::Nothing),
    ("no-enable-prefix-caching", Takes::Nothing),
    ("long-prefill-token-threshold", Takes::Int(0, 1 << 24)),
    ("max-num-partial-prefills", COUNT),
    ("scheduling-policy", Takes::Choice(&["fcfs", "priority"])),
    ("async-scheduling", Takes::Nothing),
    ("enforce-eager", Takes::Nothing),
    ("disable-cascade-attn", Takes::Nothing),
    ("disable-custom-all-reduce", Takes::Nothing),
    ("load-format", Takes::Choice(&["auto", "safetensors", "dummy"])),
    ("seed", SEED),
    ("served-model-name", Takes::Name),
    ("disable-log-requests", Takes::Nothing),
    ("disable-log-stats", Takes::Nothing),
    ("o0", Takes::Nothing),
    ("o1", Takes::Nothing),
    ("o2", Takes::Nothing),
    ("o3", Takes::Nothing),
];

const SGLANG_ATTENTION: &[&str] =
    &["flashinfer", "triton", "fa3", "torch_native", "flashmla", "cutlass_mla", "trtllm_mha"];

const SGLANG: &[(&str, Takes)] = &[
    ("mem-fraction-static", FRACTION),
    ("max-running-requests", COUNT),
    ("max-total-tokens", TOKENS),
    ("max-prefill-tokens", TOKENS),
    ("chunked-prefill-size", Takes::Int(-1, 1 << 24)),
    ("context-length", TOKENS),
    ("page-size", Takes::Int(1, 1024)),
    ("tensor-parallel-size", GPUS),
    ("tp-size", GPUS),
    ("data-parallel-size", GPUS),
    ("dp-size", GPUS),
    ("pipeline-parallel-size", GPUS),
    ("pp-size", GPUS),
    ("enable-dp-attention", Takes::Nothing),
    ("dtype", Takes::Choice(&["auto", "half", "float16", "bfloat16", "float", "float32"])),
    ("kv-cache-dtype", Takes::Choice(&["auto", "fp8_e5m2", "fp8_e4m3"])),
    ("disable-radix-cache", Takes::Nothing),
    ("disable-cuda-graph", Takes::Nothing),
    ("disable-cuda-graph-padding", Takes::Nothing),
    ("cuda-graph-bs", Takes::Ints(1, 4096)),
    ("torch-compile-max-bs", COUNT),
    ("enable-mixed-chunk", Takes::Nothing),
    ("enable-two-batch-overlap", Takes::Nothing),
    ("disable-overlap-schedule", Takes::Nothing),
    ("num-continuous-decode-steps", Takes::Int(1, 1024)),
    ("stream-interval", Takes::Int(1, 1024)),
    ("schedule-policy", Takes::Choice(&["lpm", "random", "fcfs", "dfs-weight", "lof", "priority"])),
    ("schedule-conservativeness", Takes::Fraction(0.0, 100.0)),
    ("prefill-attention-backend", Takes::Choice(SGLANG_ATTENTION)),
    ("decode-attention-backend", Takes::Choice(SGLANG_ATTENTION)),
    ("sampling-backend", Takes::Choice(&["flashinfer", "pytorch"])),
    ("load-format", Takes::Choice(&["auto", "safetensors", "dummy"])),
    ("random-seed", SEED),
    ("served-model-name", Takes::Name),
    ("skip-server-warmup", Takes::Nothing),
    ("enable-metrics", Takes::Nothing),
    ("log-level", Takes::Choice(&["debug", "info", "warning", "error", "critical"])),
];

const TRTLLM: &[(&str, Takes)] = &[
    ("backend", Takes::Choice(&["pytorch", "tensorrt", "_autodeploy"])),
    ("max-batch-size", COUNT),
    ("max-num-tokens", TOKENS),
    ("max-seq-len", TOKENS),
    ("max-beam-width", Takes::Int(1, 64)),
    ("tp-size", GPUS),
    ("pp-size", GPUS),
    ("ep-size", GPUS),
    ("kv-cache-free-gpu-memory-fraction", FRACTION),
    ("num-postprocess-workers", Takes::Int(0, 256)),
    (
        "log-level",
        Takes::Choice(&["internal_error", "error", "warning", "info", "verbose", "debug", "trace"]),
    ),
];

/// `-tp`, `-O3`: names spelled with one dash.
fn is_short(name: &str) -> bool {
    name.len() <= 2
}

fn table(engine: LaunchedEngine) -> &'static [(&'static str, Takes)] {
    match engine {
        LaunchedEngine::Vllm => VLLM,
        LaunchedEngine::Sglang => SGLANG,
        LaunchedEngine::TrtLlm => TRTLLM,
    }
}

/// The flags `extra_args` accepts for `engine`, spelled as on its command line (for the
/// form's help text and error messages).
pub fn allowed_flags(engine: LaunchedEngine) -> Vec<String> {
    table(engine)
        .iter()
        .map(|(name, _)| match name.strip_prefix('o').filter(|d| d.len() == 1) {
            Some(level) => format!("-O{level}"),
            None if is_short(name) => format!("-{name}"),
            None => format!("--{name}"),
        })
        .collect()
}

const FIELD: &str = "target.extra_args";

/// Checks `args` flag by flag against `engine`'s allow-list. Reports the first problem.
/// `owns_compilation_config`: vLLM's `--compilation-config` carries `cuda_graph_max_bs`,
/// and `-O<n>` would replace it (argparse keeps the last one).
pub(super) fn check(
    e: &mut ValidationErrors,
    engine: LaunchedEngine,
    owns_compilation_config: bool,
    args: &[String],
) {
    if args.len() > super::limits::MAX_EXTRA_ARGS {
        e.push(FIELD, format!("at most {} entries", super::limits::MAX_EXTRA_ARGS));
        return;
    }
    if let Err(message) = walk(engine, owns_compilation_config, args) {
        e.push(FIELD, message);
    }
}

fn walk(engine: LaunchedEngine, owns_compilation_config: bool, args: &[String]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if let Some(problem) = word_problem(arg) {
            return Err(format!("entry {} {problem} (one word per entry)", i + 1));
        }
        let is_flag = arg.starts_with('-') && !arg[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.');
        if !is_flag {
            return Err(format!(
                "{arg:?} is not a flag; extra arguments start with '-' (values follow their flag)"
            ));
        }
        let Some(name) = flag_name(arg) else {
            return Err(format!("{arg:?} is not a flag (expected --name, --name=value or -x)"));
        };
        let compilation_config = (arg.starts_with("-O") && !arg.starts_with("--"))
            || name.split('.').next().is_some_and(|n| n.len() >= 3 && "compilation-config".starts_with(n));
        if engine == LaunchedEngine::Vllm && owns_compilation_config && compilation_config {
            return Err(format!(
                "{arg:?} would replace the --compilation-config that target.cuda_graph_max_bs sets; remove one of them"
            ));
        }
        if let Some(owner) = render::owned_flag(engine, &name) {
            return Err(format!("{arg:?} is set by {owner}; remove it from the extra arguments"));
        }
        // Short names (`-tp`, `-O3`) take one dash, long ones two, as the engines spell them.
        let dashes_ok = arg.starts_with("--") != is_short(&name);
        let allowed = table(engine).iter().find(|(n, _)| *n == name).filter(|_| dashes_ok);
        let Some(&(_, takes)) = allowed else {
            return Err(format!(
                "{arg:?} is not among the {} flags latlab passes on: extra arguments may only tune performance ({})",
                super::engine_name(engine),
                allowed_flags(engine).join(", ")
            ));
        };
        let inline = arg.starts_with("--").then(|| arg.split_once('=').map(|(_, v)| v)).flatten();
        i += 1;
        match (takes, inline) {
            (Takes::Nothing, Some(_)) => return Err(format!("{arg:?}: this flag takes no value")),
            (Takes::Nothing, None) => {}
            (_, Some(v)) => value_ok(takes, v).map_err(|m| format!("{arg:?}: {m}"))?,
            (Takes::Ints(..), None) => {
                let start = i;
                while i < args.len() && !looks_like_flag(&args[i]) {
                    value_ok(takes, &args[i]).map_err(|m| format!("{arg:?} {:?}: {m}", args[i]))?;
                    i += 1;
                }
                if i == start {
                    return Err(format!("{arg:?} needs at least one value"));
                }
            }
            (_, None) => {
                let Some(v) = args.get(i).filter(|v| !looks_like_flag(v)) else {
                    return Err(format!("{arg:?} needs a value"));
                };
                value_ok(takes, v).map_err(|m| format!("{arg:?} {v:?}: {m}"))?;
                i += 1;
            }
        }
    }
    Ok(())
}

fn looks_like_flag(s: &str) -> bool {
    s.starts_with('-') && !s[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')
}

fn value_ok(takes: Takes, v: &str) -> Result<(), String> {
    match takes {
        Takes::Nothing => Err("this flag takes no value".into()),
        Takes::Int(min, max) | Takes::Ints(min, max) => match v.parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(()),
            _ => Err(format!("must be a whole number from {min} to {max}")),
        },
        Takes::Fraction(min, max) => match v.parse::<f64>() {
            Ok(x) if x.is_finite() && x > min && x <= max => Ok(()),
            _ => Err(format!("must be a number above {min} and at most {max}")),
        },
        Takes::Choice(options) => {
            if options.contains(&v) {
                Ok(())
            } else {
                Err(format!("must be one of {}", options.join(", ")))
            }
        }
        Takes::Name => {
            let ok = !v.is_empty()
                && v.len() <= 128
                && v.starts_with(|c: char| c.is_ascii_alphanumeric())
                && v.chars().all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
            if ok { Ok(()) } else { Err("must be a name of letters, digits and '._/-'".into()) }
        }
    }
}
