//! The CUDA backend's paths through whole prefill and decode steps at Qwen3's widths (GPU
//! machine only: `cargo test -p engine --test cuda_paths -- --ignored`): every path a
//! decode batch takes (by weights and rows) against the CPU reference, the tuning knob that
//! changes which bytes the GEMMs read against its other setting, FP8 prefill on kept bf16
//! copies against dequantizing, and run-ahead against none.

mod cuda_common;

use cuda_common::ab::{same_logits, small_model, steps_of, tuned_pair};
use cuda_common::logits::{matches_cpu, prompt};
use engine::arrivals::Arrivals;
use engine::model::cpu::CpuBackend;
use engine::model::cuda::{CudaBackend, DecodePath};
use engine::model::{Backend, Next, RowHint, SeqChunk};
use engine::weights::ModelWeights;

/// Qwen3-0.6B's shape (2 layers), bf16 and FP8, against the CPU backend through a 10-token
/// prefill (the tensor-core prefill attention) and decode graphs at batch 1 and 3 (the
/// tensor-core decode attention, merged by the second kernel at 32 splits and in clusters
/// at 8; the lean norms). FP8 batch 1 folds its norms into the GEMMs (step/fold.rs), FP8
/// batch 3 reads f16 x (step/half_x.rs), bf16 takes neither: each within `matches_cpu`.
#[test]
#[ignore = "gpu"]
fn every_decode_path_matches_cpu() {
    for fp8 in [false, true] {
        let (cfg, w) = small_model(fp8);
        let opts = kernels::GpuOptions::from_env().unwrap();
        let mut gpu = CudaBackend::new(cfg.clone(), &w, 64, 16, &opts).unwrap();
        let path = |folds_norms, f16_x| DecodePath { folds_norms, f16_x };
        assert_eq!(gpu.decode_path(1), path(fp8, false), "fp8 {fp8}: batch 1");
        assert_eq!(gpu.decode_path(3), path(false, fp8), "fp8 {fp8}: batch 3");
        // FP8 past 8 rows: the wide GEMMs on f16 x up to 32 rows, cuBLAS (bf16 x) past them.
        assert_eq!(gpu.decode_path(24), path(false, fp8), "fp8 {fp8}: batch 24");
        assert_eq!(gpu.decode_path(32), path(false, fp8), "fp8 {fp8}: batch 32");
        assert_eq!(gpu.decode_path(48), path(false, false), "fp8 {fp8}: batch 48");
        let mut cpu = CpuBackend::new(cfg, w, 64, 16);
        let mut worst = 0f32;
        steps_of(&mut gpu, &mut cpu, |what, g, c| {
            assert_eq!(g.len(), c.len());
            for (i, (rg, rc)) in g.iter().zip(c).enumerate() {
                worst = worst.max(matches_cpu(&format!("fp8 {fp8} {what} row {i}"), rg, rc));
            }
        });
        eprintln!("fp8 {fp8}: every step within {worst:.3e} of the CPU's row max");
    }
}

/// bf16 decode weights tiled (Tuning::tiled_weights: each ring stage one contiguous run of
/// bytes) against row-major: only the bulk copies' sources move, so the same logits bit
/// for bit. FP8 codes stay row-major either way (its logits within tolerance:
/// `same_logits` says why); the 10-token prefill reads the row-major bf16 matrices.
#[test]
#[ignore = "gpu"]
fn tiled_weights_give_the_same_logits() {
    use kernels::ops::WeightLayout::{Rows, Tiled};
    let set = |t: &mut kernels::Tuning, on| t.tiled_weights = on;
    // Equal logits prove nothing if the knob never reached the weights.
    for fp8 in [false, true] {
        let [off, on] = tuned_pair(fp8, set);
        assert!(off.decode_layouts().iter().all(|l| *l == Rows), "fp8 {fp8}: off");
        let want = if fp8 { Rows } else { Tiled };
        assert!(on.decode_layouts().iter().all(|l| *l == want), "fp8 {fp8}: on");
    }
    same_logits(set, "tiled weights");
}

/// FP8 prefill on bf16 copies kept from load (`keep_fp8_prefill_copies`, the engine's
/// default) against dequantizing into the scratch buffer at every prefill: the same
/// dequantization, so the same logits bit for bit; the copies take 2 bytes per projection
/// weight, and a second call makes none.
#[test]
#[ignore = "gpu"]
fn fp8_prefill_copies_give_the_same_logits() {
    for preset in ["tiny", "tiny-mqa"] {
        let cfg = engine::presets::preset(preset).unwrap();
        let mut w = ModelWeights::random(&cfg, 9).unwrap();
        w.quantize_fp8().unwrap();
        let opts = kernels::GpuOptions::from_env().unwrap();
        let mut fresh = CudaBackend::new(cfg.clone(), &w, 64, 16, &opts).unwrap();
        let mut kept = CudaBackend::new(cfg.clone(), &w, 64, 16, &opts).unwrap();
        let (h, i) = (cfg.hidden_size, cfg.intermediate_size);
        let per_layer = (cfg.q_dim() + 2 * cfg.kv_dim()) * h + h * cfg.q_dim() + 3 * i * h;
        assert_eq!(
            kept.keep_fp8_prefill_copies().unwrap(),
            2 * per_layer * cfg.num_hidden_layers,
            "{preset}"
        );
        assert_eq!(kept.keep_fp8_prefill_copies().unwrap(), 0, "{preset}");
        // 40 rows: the prefill (cuBLAS) path.
        let tokens = prompt(40, 5);
        let (a, b) =
            (fresh.logits_all_positions(&tokens).unwrap(), kept.logits_all_positions(&tokens).unwrap());
        assert!(a == b, "{preset}: prefill logits differ with the kept copies");
    }
}

/// Run-ahead (`Tuning::run_ahead`, run_ahead.rs) against none: greedy decoding as the
/// engine drives it, with its hints, gives the same tokens. Three sequences on 16-token
/// pages whose tables grow only when the next position needs a page (as the scheduler's),
/// so steps cross page boundaries where nothing can be queued; one sequence leaves the
/// batch at step 12 (the queued step is not the next one); step 20 is asked twice (the
/// second time it is not the queued one either); the last step's hint says the sequences
/// end. Cases: off; on with rows that end only by length, which must queue and use the
/// queued steps (`ahead_hits`, or the test proves nothing); on with rows that may stop on
/// a token, and on with a request on its way in the whole time, which must queue nothing.
#[test]
#[ignore = "gpu"]
fn run_ahead_gives_the_same_tokens() {
    for fp8 in [false, true] {
        let (cfg, w) = small_model(fp8);
        let o = kernels::GpuOptions::from_env().unwrap();
        // (run-ahead on, rows end only by length, a request on its way in)
        let cases = [(false, true, false), (true, true, false), (true, false, false), (true, true, true)];
        let runs: Vec<(Vec<Vec<u32>>, u64)> = cases
            .into_iter()
            .map(|(on, only_length_ends, arriving)| {
                let case =
                    format!("fp8 {fp8}, on {on}, only_length_ends {only_length_ends}, arriving {arriving}");
                let mut be = CudaBackend::new(cfg.clone(), &w, 64, 16, &o).unwrap();
                be.set_run_ahead(on);
                let arrivals = Arrivals::default();
                if arriving {
                    arrivals.sent();
                }
                be.watch_arrivals(arrivals);
                let seqs = greedy_decode(&mut be, only_length_ends, &case);
                (seqs, be.ahead_hits())
            })
            .collect();
        let (off, _) = &runs[0];
        for ((tokens, hits), (on, only_length_ends, arriving)) in runs.iter().zip(cases) {
            let case =
                format!("fp8 {fp8}, on {on}, only_length_ends {only_length_ends}, arriving {arriving}");
            assert_eq!(tokens, off, "{case}: run-ahead changed the tokens");
            if on && only_length_ends && !arriving {
                // Of the 31 decode calls, those after a call that could queue: not after a
                // page boundary, the batch change, the repeat or the last hint.
                assert!(*hits >= 20, "{case}: only {hits} queued steps were used");
            } else {
                assert_eq!(*hits, 0, "{case}: queued steps where none may be");
            }
            eprintln!("{case}: {hits} of 31 decode calls found their step queued");
        }
    }
}

/// The three sequences of `run_ahead_gives_the_same_tokens` decoded greedily through `be`
/// as the engine drives it (prefill, then 30 decode steps with the batch change at step 12
/// and step 20 asked twice), with hints whose rows end only by length when
/// `only_length_ends`. Returns the sequences.
fn greedy_decode(be: &mut CudaBackend, only_length_ends: bool, case: &str) -> Vec<Vec<u32>> {
    let mut seqs = [prompt(10, 1), prompt(14, 2), prompt(5, 3)];
    let mut tables: [Vec<u32>; 3] = [vec![], vec![], vec![]];
    let mut free = (0..64u32).rev().collect::<Vec<_>>();
    let grow = |t: &mut Vec<u32>, len: usize, free: &mut Vec<u32>| {
        while t.len() * 16 < len {
            t.push(free.pop().unwrap());
        }
    };
    let hint = |may_continue| RowHint { greedy: true, may_continue, only_length_ends };
    // Prefill each prompt; its last position's token comes back.
    for i in 0..3 {
        grow(&mut tables[i], seqs[i].len(), &mut free);
        let c = [SeqChunk { tokens: &seqs[i], start_pos: 0, block_table: &tables[i], want_logits: true }];
        let Next::Token(t) = be.forward_next(&c, &[hint(true)]).unwrap()[0] else {
            panic!("{case}: greedy prefill gave logits");
        };
        seqs[i].push(t);
    }
    for step in 0..30 {
        let live: Vec<usize> = if step < 12 { vec![0, 1, 2] } else { vec![0, 2] };
        for &i in &live {
            grow(&mut tables[i], seqs[i].len(), &mut free);
        }
        let chunks: Vec<SeqChunk> = live
            .iter()
            .map(|&i| SeqChunk {
                tokens: &seqs[i][seqs[i].len() - 1..],
                start_pos: seqs[i].len() - 1,
                block_table: &tables[i],
                want_logits: true,
            })
            .collect();
        let hints = vec![hint(step < 29); live.len()];
        let mut next = be.forward_next(&chunks, &hints).unwrap();
        if step == 20 {
            let again = be.forward_next(&chunks, &hints).unwrap();
            assert_eq!(again, next, "{case}: step 20 again");
            next = again;
        }
        for (&i, n) in live.iter().zip(next) {
            let Next::Token(t) = n else {
                panic!("{case}: greedy decode gave logits");
            };
            seqs[i].push(t);
        }
    }
    seqs.to_vec()
}
