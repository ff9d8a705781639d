//! Decode batches past 8 rows on the GPU (GPU machine only: `cargo test -p engine --test
//! cuda_wide_batches -- --ignored`): the graphs of the batch ladder (captured at start,
//! padded to the next size), the GEMMs inside them (FP8 at 9-64 rows: the wide FP8 kernels,
//! whose split-K sums may differ in their last bits between runs; bf16 on cuBLAS) and the
//! split-context attention at up to 64 rows, against the CPU reference and against the
//! same sequences decoded alone, within tolerances (never bit for bit).

mod cuda_common;

use cuda_common::ab::small_model;
use cuda_common::logits::{close_logits, matches_cpu, prompt};
use engine::model::cpu::CpuBackend;
use engine::model::cuda::{CudaBackend, graph_sizes};
use engine::model::{Backend, Next, RowHint, SeqChunk};
use engine::sampling::argmax;

/// Pages of 16 tokens: every sequence here fits in one, page i + 1 is sequence i's.
const PAGES: usize = 80;
/// Decode steps after the prefill.
const STEPS: usize = 4;

fn backend(fp8: bool) -> (CudaBackend, CpuBackend) {
    let (cfg, w) = small_model(fp8);
    let opts = kernels::GpuOptions::from_env().unwrap();
    let mut gpu = CudaBackend::new(cfg.clone(), &w, PAGES, 16, &opts).unwrap();
    let captured = gpu.capture_decode_graphs(64).unwrap();
    assert_eq!(captured, graph_sizes(64), "fp8 {fp8}: every size of the ladder captured at start");
    (gpu, CpuBackend::new(cfg, w, PAGES, 16))
}

/// Each sequence's chunk of a step: the whole prompt at step 0, then its last token.
fn chunks_at<'a>(seqs: &'a [Vec<u32>], tables: &'a [Vec<u32>], step: usize) -> Vec<SeqChunk<'a>> {
    seqs.iter()
        .zip(tables)
        .map(|(s, t)| {
            let from = if step == 0 { 0 } else { s.len() - 1 };
            SeqChunk { tokens: &s[from..], start_pos: from, block_table: t, want_logits: true }
        })
        .collect()
}

/// Prompts of 3-9 tokens, distinct per sequence.
fn prompts(n: usize) -> Vec<Vec<u32>> {
    (0..n).map(|i| prompt(3 + i % 7, 11 + i as u32)).collect()
}

/// Batches of 12 (a graph of its own), 16, 20 (padded to 24), 32, 40 (padded to 48) and
/// 64 rows: a prefill of every prompt in one step (the prefill attention; FP8 projections
/// of 9-64 rows on the wide kernels, else cuBLAS), then decode steps (the graph of the
/// padded size: FP8's 16-, 32-, 48- and 64-row wide forms; the split-context attention)
/// fed the CPU's tokens. Every row's logits within `matches_cpu` of the CPU reference's.
#[test]
#[ignore = "gpu"]
fn wide_decode_batches_match_cpu() {
    for fp8 in [false, true] {
        let (mut gpu, mut cpu) = backend(fp8);
        let mut worst = 0f32;
        for batch in [12usize, 16, 20, 32, 40, 64] {
            let mut seqs = prompts(batch);
            let tables: Vec<Vec<u32>> = (0..batch as u32).map(|i| vec![i + 1]).collect();
            for step in 0..=STEPS {
                let chunks = chunks_at(&seqs, &tables, step);
                let (g, c) = (gpu.forward(&chunks).unwrap(), cpu.forward(&chunks).unwrap());
                assert_eq!(g.len(), batch);
                for (i, (rg, rc)) in g.iter().zip(&c).enumerate() {
                    let what = format!("fp8 {fp8} batch {batch} step {step} row {i}");
                    worst = worst.max(matches_cpu(&what, rg, rc));
                }
                for (s, rc) in seqs.iter_mut().zip(&c) {
                    s.push(argmax(rc));
                }
            }
        }
        eprintln!("fp8 {fp8}: every wide step within {worst:.3e} of the CPU's row max");
    }
}

/// The engine's greedy path (`forward_next`, tokens from the graph's argmax) at batch 16,
/// 24 and 64 against each sequence decoded alone at batch 1 (the skinny GEMMs): the same
/// tokens, step by step. A token may differ only where batch 1's own logits have a
/// near-tie at that step; then the batch's logits are checked against batch 1's instead.
#[test]
#[ignore = "gpu"]
fn wide_batches_decode_the_tokens_of_batch_one() {
    let greedy = RowHint { greedy: true, may_continue: true, only_length_ends: true };
    for fp8 in [false, true] {
        let (mut gpu, _) = backend(fp8);
        for batch in [16usize, 24, 64] {
            let tables: Vec<Vec<u32>> = (0..batch as u32).map(|i| vec![i + 1]).collect();
            // Alone: each sequence's prefill and decode, with its logits at each step.
            let mut alone: Vec<(Vec<u32>, Vec<Vec<f32>>)> = Vec::new();
            for (s, t) in prompts(batch).into_iter().zip(&tables) {
                let (mut s, mut logits) = (s, Vec::new());
                for step in 0..=STEPS {
                    let from = if step == 0 { 0 } else { s.len() - 1 };
                    let c =
                        [SeqChunk { tokens: &s[from..], start_pos: from, block_table: t, want_logits: true }];
                    let l = gpu.forward(&c).unwrap().remove(0);
                    s.push(argmax(&l));
                    logits.push(l);
                }
                alone.push((s, logits));
            }
            // Together: the same prompts in one batch, greedy tokens from the GPU.
            let mut seqs = prompts(batch);
            for step in 0..=STEPS {
                let chunks = chunks_at(&seqs, &tables, step);
                let next = gpu.forward_next(&chunks, &vec![greedy; batch]).unwrap();
                for (i, (s, n)) in seqs.iter_mut().zip(next).enumerate() {
                    let Next::Token(tok) = n else { panic!("fp8 {fp8}: greedy rows gave logits") };
                    let (want, logits) = (alone[i].0[s.len()], &alone[i].1[step]);
                    if tok != want {
                        let gap = logits[want as usize] - logits[tok as usize];
                        let scale = logits.iter().fold(0f32, |m, v| m.max(v.abs()));
                        assert!(
                            gap <= 2e-2 * scale,
                            "fp8 {fp8} batch {batch} step {step} row {i}: token {tok}, alone {want} (gap {gap})"
                        );
                        eprintln!("fp8 {fp8} batch {batch} step {step} row {i}: near-tie, gap {gap:.3e}");
                    }
                    // Teacher-forced from here on, so one near-tie does not fork the rest.
                    s.push(want);
                }
            }
            // And the logits of a wide step against the alone ones at the last step.
            let chunks: Vec<SeqChunk> = seqs
                .iter()
                .zip(&tables)
                .map(|(s, t)| SeqChunk {
                    tokens: &s[s.len() - 2..s.len() - 1],
                    start_pos: s.len() - 2,
                    block_table: t,
                    want_logits: true,
                })
                .collect();
            for (i, l) in gpu.forward(&chunks).unwrap().iter().enumerate() {
                close_logits(&format!("fp8 {fp8} batch {batch} row {i}"), l, &alone[i].1[STEPS]);
            }
        }
    }
}
