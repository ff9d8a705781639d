//! The A/B harness cuda_paths runs each tuning switch through: two backends over the same
//! small random model that differ in one switch, their logits step by step, and the two
//! verdicts (the same bits, or within `close_logits`).

use super::logits::{close_logits, prompt};
use engine::model::cuda::CudaBackend;
use engine::model::{Backend, SeqChunk};
use engine::weights::ModelWeights;

/// Two backends over the same random weights (qwen3-0.6b's shape, 2 layers; FP8 with
/// `fp8`) that differ in one tuning switch (`set(tuning, false / true)`): a prefill of 10
/// tokens, then 5 decode steps (graphs) over growing contexts, at batches 1 and 3. `judge`
/// gets each step's logits from both, and a label.
pub fn ab_steps(
    fp8: bool,
    set: impl Fn(&mut kernels::Tuning, bool),
    judge: impl FnMut(&str, &[Vec<f32>], &[Vec<f32>]),
) {
    steps_of(ab_backends(fp8, set), judge)
}

/// `ab_steps`' prefill and decode steps through two given backends.
pub fn steps_of(
    mut backends: [CudaBackend; 2],
    mut judge: impl FnMut(&str, &[Vec<f32>], &[Vec<f32>]),
) {
    let tables: [Vec<u32>; 3] = [vec![40, 3, 17, 8], vec![9, 22, 30], vec![5, 61, 12]];
    let seqs = [prompt(37, 1), prompt(20, 2), prompt(30, 3)];
    for batch in [1usize, 3] {
        let mut lens: Vec<usize> = vec![0; batch];
        for step in 0..6 {
            let chunks: Vec<SeqChunk> = (0..batch)
                .map(|i| {
                    let (from, to) = if step == 0 {
                        (0, 10)
                    } else {
                        (lens[i], lens[i] + 1)
                    };
                    SeqChunk {
                        tokens: &seqs[i][from..to],
                        start_pos: from,
                        block_table: &tables[i],
                        want_logits: true,
                    }
                })
                .collect();
            for (i, c) in chunks.iter().enumerate() {
                lens[i] = c.start_pos + c.tokens.len();
            }
            let [off, on] = &mut backends;
            let (a, b) = (off.forward(&chunks).unwrap(), on.forward(&chunks).unwrap());
            judge(&format!("batch {batch} step {step}"), &a, &b);
        }
    }
}

/// Qwen3-0.6B's shape with 2 layers of random weights (seed 5), FP8 with `fp8`.
pub fn small_model(fp8: bool) -> (engine::config::ModelConfig, ModelWeights) {
    let mut cfg = engine::presets::preset("qwen3-0.6b").unwrap();
    cfg.num_hidden_layers = 2;
    let mut w = ModelWeights::random(&cfg, 5).unwrap();
    if fp8 {
        w.quantize_fp8().unwrap();
    }
    (cfg, w)
}

/// `ab_steps`' two backends: off, then on.
pub fn ab_backends(fp8: bool, set: impl Fn(&mut kernels::Tuning, bool)) -> [CudaBackend; 2] {
    backends_over(small_model(fp8), set)
}

/// Two backends over the given model: `set(tuning, false / true)`.
pub fn backends_over(
    (cfg, w): (engine::config::ModelConfig, ModelWeights),
    set: impl Fn(&mut kernels::Tuning, bool),
) -> [CudaBackend; 2] {
    let base = kernels::GpuOptions::from_env().unwrap();
    [false, true].map(|on| {
        let mut o = base.clone();
        set(&mut o.tuning, on);
        CudaBackend::new(cfg.clone(), &w, 64, 16, &o).unwrap()
    })
}

/// `ab_steps` for a switch that must not change a bit: bf16 and FP8 weights.
pub fn same_logits(set: impl Fn(&mut kernels::Tuning, bool) + Copy, change: &str) {
    for fp8 in [false, true] {
        ab_steps(fp8, set, |what, a, b| {
            assert_eq!(a, b, "fp8 {fp8} {what}: {change} changed the logits")
        });
    }
}

/// `ab_steps` for a switch that sums in another order: bf16 and FP8 weights, every row's
/// logits within `close_logits`.
pub fn close_steps(set: impl Fn(&mut kernels::Tuning, bool) + Copy, change: &str) {
    for fp8 in [false, true] {
        ab_steps(fp8, set, |what, a, b| {
            for (i, (ra, rb)) in a.iter().zip(b).enumerate() {
                close_logits(&format!("fp8 {fp8} {what} row {i}: {change}"), ra, rb);
            }
        });
    }
}

/// The attention geometry of `ab_steps`' model (qwen3-0.6b: 16 q / 8 kv heads, head_dim
/// 128).
pub fn small_attention_dims() -> kernels::ops::AttnDims {
    let c = engine::presets::preset("qwen3-0.6b").unwrap();
    kernels::ops::AttnDims {
        heads: c.num_attention_heads,
        kv_heads: c.num_key_value_heads,
        head_dim: c.head_dim,
    }
}
