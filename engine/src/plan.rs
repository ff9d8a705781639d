//! Engine arguments (what the operator asked for) and the `Plan` derived from them and the
//! model at start: KV page count, block size, batch limits. Immutable, logged, and served on
//! /v1/engine/info.

use crate::config::ModelConfig;
use crate::error::{EngineError, Result};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    Auto,
    Cpu,
    Cuda,
}

#[derive(Debug, Clone)]
pub struct EngineArgs {
    /// Most sequences decoding at once; None: the backend's default (`DEFAULT_MAX_BATCH_*`).
    pub max_batch: Option<usize>,
    pub max_model_len: Option<usize>,
    pub kv_pages: Option<usize>,
    pub block_size: usize,
    pub max_batched_tokens: usize,
    pub device: Device,
    /// Seeds random weights and requests that bring no seed of their own.
    pub seed: u64,
    /// `--quantization`; None: as the checkpoint stores it (see model_source).
    pub quantization: Option<crate::model_source::Quantization>,
    /// `--fp8-prefill-weights`: how FP8 projections reach prefill's GEMMs on CUDA.
    pub fp8_prefill: Fp8Prefill,
    /// `--speculative-*`: decode with a draft model (CPU backend).
    pub speculative: Option<crate::spec::SpeculativeArgs>,
}

/// How an FP8 model's projections reach prefill's bf16 cuBLAS GEMMs on CUDA (decode reads
/// the FP8 codes either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fp8Prefill {
    /// A bf16 copy of every projection, made once at load: 2 bytes per weight of GPU memory
    /// more (14 GB for Qwen3-8B), and prefill as fast as with bf16 weights.
    Bf16Copy,
    /// Each projection dequantized into one scratch buffer at every prefill: no extra
    /// memory, ~6 ms more TTFT for a Qwen3-8B prompt on an H200.
    Dequant,
}

impl Default for EngineArgs {
    fn default() -> Self {
        EngineArgs {
            max_batch: None,
            max_model_len: None,
            kv_pages: None,
            block_size: 16,
            max_batched_tokens: 512,
            device: Device::Auto,
            seed: 0,
            quantization: None,
            fp8_prefill: Fp8Prefill::Bf16Copy,
            speculative: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub backend: &'static str,
    pub block_size: usize,
    pub kv_pages: usize,
    pub kv_bytes_per_token: usize,
    pub kv_cache_bytes: usize,
    pub max_batch: usize,
    pub max_model_len: usize,
    pub max_batched_tokens: usize,
    /// The batch sizes decode steps replay as CUDA graphs (captured at start; padded up to
    /// the next one); empty on CPU or with graphs off. Larger batches run eagerly.
    pub decode_graphs: Vec<usize>,
    pub weight_params: usize,
    pub compute_dtype: &'static str,
    pub threads: usize,
    /// The GPU's name when the backend is cuda (filled in once the backend is up).
    pub gpu: Option<String>,
    /// FP8 models on CUDA: how prefill gets bf16 weights (`EngineArgs::fp8_prefill`).
    pub fp8_prefill: Option<Fp8Prefill>,
    /// The CUDA backend's tuning as it runs: the kernels' knobs, graphs, run-ahead, step
    /// timing (filled in once it is up).
    pub cuda: Option<kernels::Tuning>,
}

/// Default CPU KV budget when --kv-pages is not given.
const CPU_KV_BUDGET_BYTES: usize = 2 << 30;
/// Default CUDA KV budget when --kv-pages is not given (bf16: ~110 K tokens of Qwen3-8B).
const CUDA_KV_BUDGET_BYTES: usize = 16 << 30;
/// Default batch limit on CUDA: the largest captured decode graph, so every batch the
/// scheduler forms replays one. The KV budget is shared by whatever runs; past it the
/// scheduler preempts (recompute) instead of refusing.
pub const DEFAULT_MAX_BATCH_CUDA: usize = crate::model::cuda::MAX_GRAPH_ROWS;
/// Default batch limit on CPU: the reference backend is for correctness, not load.
pub const DEFAULT_MAX_BATCH_CPU: usize = 8;
/// Default context cap on CPU: beyond it the reference backend is too slow to be useful.
const CPU_DEFAULT_MAX_MODEL_LEN: usize = 4096;

impl Plan {
    /// Whether a step of this engine can decode 9-64 rows at once (the wide FP8 GEMM's
    /// steps): batches past the skinny GEMMs' 8 rows, or any speculation (a verify runs
    /// every tree node of every sequence as a row).
    pub fn decodes_wide_rows(&self, speculative: bool) -> bool {
        speculative || self.max_batch > kernels::ops::SKINNY_MAX_ROWS
    }

    pub fn derive(cfg: &ModelConfig, a: &EngineArgs) -> Result<Plan> {
        let backend = match a.device {
            Device::Cpu => "cpu",
            Device::Auto if crate::model::cuda::cuda_available() => "cuda",
            Device::Auto => "cpu",
            Device::Cuda if crate::model::cuda::cuda_available() => "cuda",
            Device::Cuda => {
                return Err(EngineError::config(
                    "device",
                    "cuda asked for, but no CUDA driver or device was found",
                ));
            }
        };
        let cuda = backend == "cuda";
        let max_batch =
            a.max_batch.unwrap_or(if cuda { DEFAULT_MAX_BATCH_CUDA } else { DEFAULT_MAX_BATCH_CPU });
        if max_batch == 0 {
            return Err(EngineError::config("max_batch", "must be > 0"));
        }
        if a.block_size == 0 {
            return Err(EngineError::config("block_size", "must be > 0"));
        }
        if a.max_batched_tokens == 0 {
            return Err(EngineError::config("max_batched_tokens", "must be > 0"));
        }
        let default_len = if cuda {
            cfg.max_position_embeddings
        } else {
            cfg.max_position_embeddings.min(CPU_DEFAULT_MAX_MODEL_LEN)
        };
        let max_model_len = a.max_model_len.unwrap_or(default_len);
        if max_model_len < 2 || max_model_len > cfg.max_position_embeddings {
            return Err(EngineError::config(
                "max_model_len",
                format!(
                    "{max_model_len} must be in [2, max_position_embeddings = {}]",
                    cfg.max_position_embeddings
                ),
            ));
        }
        // The CPU cache holds f32, the CUDA cache bf16.
        let kv_elem_bytes = if cuda { 2 } else { 4 };
        let kv_bytes_per_token = cfg.num_hidden_layers * 2 * cfg.kv_dim() * kv_elem_bytes;
        let kv_budget = if cuda { CUDA_KV_BUDGET_BYTES } else { CPU_KV_BUDGET_BYTES };
        // A speculating row's verify writes its tree past the sequence's last position.
        let lookahead = a.speculative.as_ref().map_or(0, |s| s.cfg.lookahead());
        // A speculating backend also keeps, per KV slot, the draft's aux input (EAGLE-3's
        // three captured hidden states) and the draft layer's own K and V (counted at the
        // target's KV width, which every Qwen3 draft shares), in the cache's element type.
        let aux_bytes_per_token = match a.speculative {
            Some(_) => (3 * cfg.hidden_size + 2 * cfg.kv_dim()) * kv_elem_bytes,
            None => 0,
        };
        let one_seq_pages = (max_model_len + lookahead).div_ceil(a.block_size);
        let kv_pages = match a.kv_pages {
            Some(n) => n,
            None => {
                let want = (max_batch * max_model_len).div_ceil(a.block_size);
                let budget = kv_budget / ((kv_bytes_per_token + aux_bytes_per_token) * a.block_size);
                want.min(budget).max(one_seq_pages)
            }
        };
        // A sequence of max_model_len must fit alone, or preemption could never make progress.
        if kv_pages < one_seq_pages {
            return Err(EngineError::config(
                "kv_pages",
                format!(
                    "{kv_pages} pages of {} tokens cannot hold one max_model_len ({max_model_len}) sequence and its \
                     speculative lookahead ({lookahead}); need {one_seq_pages}",
                    a.block_size
                ),
            ));
        }
        Ok(Plan {
            backend,
            block_size: a.block_size,
            kv_pages,
            kv_bytes_per_token,
            kv_cache_bytes: kv_pages * a.block_size * kv_bytes_per_token,
            max_batch,
            max_model_len,
            max_batched_tokens: a.max_batched_tokens,
            weight_params: crate::model_source::param_count(cfg),
            compute_dtype: match (cuda, cfg.quantization.is_some()) {
                (true, true) => "fp8 projections (128x128 block scales), bf16 lm_head, f32 accumulate",
                (true, false) => "bf16 weights, f32 accumulate",
                // The CPU reference runs FP8 models on their exact dequantization.
                (false, true) => "f32 (fp8 projections dequantized)",
                (false, false) => "f32",
            },
            decode_graphs: Vec::new(),
            gpu: None,
            cuda: None,
            fp8_prefill: (cuda && cfg.quantization.is_some()).then_some(a.fp8_prefill),
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_pages_and_rejects_impossible_plans() {
        let cfg = crate::presets::preset("qwen3-0.6b").unwrap();
        let p = Plan::derive(&cfg, &EngineArgs::default()).unwrap();
        assert_eq!(p.max_model_len, 4096);
        assert_eq!(p.kv_bytes_per_token, 28 * 2 * 8 * 128 * 4);
        assert!(p.kv_cache_bytes <= 2 << 30 && p.kv_pages >= 4096 / 16);
        let err = Plan::derive(&cfg, &EngineArgs { kv_pages: Some(10), ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("kv_pages"));
        let err = Plan::derive(&cfg, &EngineArgs { max_model_len: Some(1 << 20), ..Default::default() })
            .unwrap_err();
        assert!(err.to_string().contains("max_model_len"));
        let err = Plan::derive(&cfg, &EngineArgs { device: Device::Cuda, ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("device"));
    }

    #[test]
    fn wide_rows_come_with_batches_past_8_or_speculation() {
        let cfg = crate::presets::preset("tiny").unwrap();
        let plan = |max_batch| {
            let a = EngineArgs { device: Device::Cpu, max_batch: Some(max_batch), ..Default::default() };
            Plan::derive(&cfg, &a).unwrap()
        };
        assert!(!plan(1).decodes_wide_rows(false) && !plan(8).decodes_wide_rows(false));
        assert!(plan(9).decodes_wide_rows(false) && plan(64).decodes_wide_rows(false));
        assert!(plan(1).decodes_wide_rows(true), "a verify of one sequence has a row per tree node");
    }

    #[test]
    fn fp8_prefill_weights_are_planned_only_for_fp8_on_cuda() {
        let bf16 = crate::presets::preset("tiny").unwrap();
        let fp8 = ModelConfig { quantization: Some(crate::quant_config::QuantConfig::fp8()), ..bf16.clone() };
        assert_eq!(EngineArgs::default().fp8_prefill, Fp8Prefill::Bf16Copy);
        let cpu = EngineArgs { device: Device::Cpu, ..Default::default() };
        for cfg in [&bf16, &fp8] {
            assert_eq!(Plan::derive(cfg, &cpu).unwrap().fp8_prefill, None);
        }
        assert_eq!(serde_json::to_value(Fp8Prefill::Bf16Copy).unwrap(), "bf16-copy");
    }
}
