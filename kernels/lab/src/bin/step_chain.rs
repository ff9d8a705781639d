//! Where a decode step's time goes outside the linears (GPU machine only; prints, asserts
//! nothing about speed): `cargo run -p kernels-lab --bin step_chain`.
//!
//! A whole Qwen3-8B decode step is launched from the real ops over 36 distinct layers of
//! zero weights (bf16 or FP8: nothing stays in L2 between layers), in the engine's order,
//! captured as one CUDA graph, as the engine replays it. Then the same step with one kind of
//! kernel left out. The difference is what that kind costs inside the chain (its own work
//! plus the dependency hand-offs around it), which a kernel timed alone cannot show: with
//! programmatic dependent launch a kernel's cost depends on its neighbours.
//!
//! `LATLAB_CHAIN_WEIGHTS` and `LATLAB_CHAIN_BATCHES` pick the cases (kernels_lab::step::cases),
//! 1-64 rows: past 8 the linears are the engine's wide ones (FP8) or cuBLAS (bf16).

use kernels::cudarc::driver::CudaSlice;
use kernels::{Gpu, GpuOptions, bf16, ops};
use kernels_lab::step::*;
use kernels_lab::timing::time_us_reps;

fn decode_step_marginal_costs() {
    let opts = GpuOptions::from_env().unwrap();
    let (weights, batches) = cases(ops::WIDE_MAX_ROWS);
    let variants: [(&str, Omit); 5] = [
        ("whole step", Omit::default()),
        ("without norms", Omit { norms: true, ..Omit::default() }),
        ("without qk-norm/rope/kv write", Omit { rope: true, ..Omit::default() }),
        ("without attention", Omit { attention: true, ..Omit::default() }),
        (
            "linears, embedding, argmax only",
            Omit { norms: true, rope: true, attention: true, ..Omit::default() },
        ),
    ];
    println!("| weights | m | step | us | minus whole step |");
    for fp8 in weights {
        let g = Gpu::new(&opts).unwrap();
        let head: CudaSlice<bf16> = g.stream().alloc_zeros(VOCAB * HIDDEN).unwrap();
        let mut layers = Layer::all_zeros(&g, fp8, batches.iter().copied().max().unwrap_or(1));
        for &m in &batches {
            let meta = Meta::new(&g, m);
            let mut b = Buffers::new(&g, m);
            let mut whole = 0f32;
            for (name, omit) in variants {
                let us = time_us_reps(&g, 1, || step(&g, m, &mut layers, &head, &meta, &mut b, omit));
                if matches!(name, "whole step") {
                    whole = us;
                }
                println!(
                    "| {} | {m} | {name} | {us:.0} | {:.0} |",
                    if fp8 { "fp8" } else { "bf16" },
                    us - whole
                );
            }
        }
    }
}

fn main() {
    decode_step_marginal_costs();
}
