//! The stepped comparison cuda_paths runs: two backends over the same small random model
//! take the same prefill and decode steps, and a judge sees each step's logits from both.
//! The two are a CUDA backend and the CPU reference, or two CUDA backends that differ in
//! one `Tuning` knob.

use super::logits::{close_logits, prompt};
use engine::model::cuda::CudaBackend;
use engine::model::{Backend, SeqChunk};
use engine::weights::ModelWeights;

/// A prefill of 10 tokens, then 5 decode steps (graphs on CUDA) over growing contexts, at
/// batches 1 and 3, through both backends. `judge` gets each step's logits from both, and
/// a label.
pub fn steps_of(
    a: &mut dyn Backend,
    b: &mut dyn Backend,
    mut judge: impl FnMut(&str, &[Vec<f32>], &[Vec<f32>]),
) {
    let tables: [Vec<u32>; 3] = [vec![40, 3, 17, 8], vec![9, 22, 30], vec![5, 61, 12]];
    let seqs = [prompt(37, 1), prompt(20, 2), prompt(30, 3)];
    for batch in [1usize, 3] {
        let mut lens: Vec<usize> = vec![0; batch];
        for step in 0..6 {
            let chunks: Vec<SeqChunk> = (0..batch)
                .map(|i| {
                    let (from, to) = if step == 0 { (0, 10) } else { (lens[i], lens[i] + 1) };
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
            let (x, y) = (a.forward(&chunks).unwrap(), b.forward(&chunks).unwrap());
            judge(&format!("batch {batch} step {step}"), &x, &y);
        }
    }
}

/// Qwen3-0.6B's shape with 2 layers of random weights (seed 5), FP8 with `fp8`: hidden
/// 1024 and head_dim 128, the widths where the engine's Qwen3 paths run (the lean norms,
/// f16 x, the tensor-core attention and prefill kernels), which the tiny presets are too
/// narrow for.
pub fn small_model(fp8: bool) -> (engine::config::ModelConfig, ModelWeights) {
    let mut cfg = engine::presets::preset("qwen3-0.6b").unwrap();
    cfg.num_hidden_layers = 2;
    let mut w = ModelWeights::random(&cfg, 5).unwrap();
    if fp8 {
        w.quantize_fp8().unwrap();
    }
    (cfg, w)
}

/// Two CUDA backends over `small_model(fp8)` that differ in one tuning knob
/// (`set(tuning, false / true)`): off, then on.
pub fn tuned_pair(fp8: bool, set: impl Fn(&mut kernels::Tuning, bool)) -> [CudaBackend; 2] {
    let (cfg, w) = small_model(fp8);
    let base = kernels::GpuOptions::from_env().unwrap();
    [false, true].map(|on| {
        let mut o = base.clone();
        set(&mut o.tuning, on);
        CudaBackend::new(cfg.clone(), &w, 64, 16, &o).unwrap()
    })
}

/// `steps_of` over a tuned pair for a knob that must not change a bit: bf16 weights bit for
/// bit; FP8 within `close_logits`, since its prefills (10 and 30 rows) run the wide FP8
/// GEMM, whose split-K blocks add into y in whatever order they finish, so two runs of the
/// same step may differ in the sums' last bits and everything after them.
pub fn same_logits(set: impl Fn(&mut kernels::Tuning, bool) + Copy, change: &str) {
    for fp8 in [false, true] {
        let [mut off, mut on] = tuned_pair(fp8, set);
        steps_of(&mut off, &mut on, |what, a, b| {
            if !fp8 {
                return assert_eq!(a, b, "bf16 {what}: {change} changed the logits");
            }
            assert_eq!(a.len(), b.len(), "fp8 {what}: rows");
            for (i, (ra, rb)) in a.iter().zip(b).enumerate() {
                close_logits(&format!("fp8 {what} row {i}: {change}"), ra, rb);
            }
        });
    }
}
