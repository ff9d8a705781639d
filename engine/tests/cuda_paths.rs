//! The CUDA backend's kernel paths against each other (GPU machine only: `cargo test -p
//! engine --test cuda_paths -- --ignored`): each `Tuning` switch of the GEMMs, weights and
//! norms (the attention's: cuda_attention_paths), FP8 prefill on kept bf16 copies, and
//! run-ahead, through whole prefill and decode steps. A switch that only moves work in
//! time must not change a bit; one that sums in another order must stay within
//! `close_logits`.

mod cuda_common;

use cuda_common::ab::{
    ab_backends, backends_over, close_steps, same_logits, small_model, steps_of,
};
use cuda_common::logits::prompt;
use engine::arrivals::Arrivals;
use engine::model::cuda::{CudaBackend, RunAhead};
use engine::model::{Backend, Next, RowHint, SeqChunk};
use engine::weights::ModelWeights;

/// Decode weights tiled (Tuning::tiled_weights: each ring stage one contiguous run of
/// bytes) against row-major: only the bulk copies' sources move, so the same logits bit
/// for bit. The 10-token prefill reads the row-major bf16 matrices, or dequantizes the
/// tiled FP8 codes.
#[test]
#[ignore = "gpu"]
fn tiled_weights_give_the_same_logits() {
    use kernels::TiledWeights::{All, Off};
    use kernels::ops::WeightLayout::{Rows, Tiled};
    let set = |t: &mut kernels::Tuning, on| t.tiled_weights = if on { All } else { Off };
    // Equal logits prove nothing if the switch never reached the weights.
    for fp8 in [false, true] {
        let [off, on] = ab_backends(fp8, set);
        assert!(
            off.decode_layouts().iter().all(|l| *l == Rows),
            "fp8 {fp8}: off"
        );
        assert!(
            on.decode_layouts().iter().all(|l| *l == Tiled),
            "fp8 {fp8}: on"
        );
    }
    same_logits(set, "tiled weights");
}

/// lm_head tiled (Tuning::tiled_lm_head, with no row-major copy left) against row-major,
/// on an untied model: the same logits bit for bit, in prefill and in decode graphs (both
/// run the skinny GEMM for their at most 3 rows of logits). A tied lm_head is the
/// embedding, which stays row-major.
#[test]
#[ignore = "gpu"]
fn tiled_lm_head_gives_the_same_logits() {
    use kernels::ops::WeightLayout::{Rows, Tiled};
    let set = |t: &mut kernels::Tuning, on| t.tiled_lm_head = on;
    let [_, tied] = ab_backends(false, set);
    assert_eq!(
        tied.lm_head_layout(),
        Rows,
        "a tied lm_head stays row-major"
    );
    for fp8 in [false, true] {
        let (mut cfg, _) = small_model(fp8);
        cfg.tie_word_embeddings = false;
        let mut w = ModelWeights::random(&cfg, 5).unwrap();
        if fp8 {
            w.quantize_fp8().unwrap();
        }
        assert!(w.lm_head.is_some(), "the untied model has its own lm_head");
        let [off, on] = backends_over((cfg, w), set);
        // Equal logits prove nothing if the switch never reached the weights.
        assert_eq!((off.lm_head_layout(), on.lm_head_layout()), (Rows, Tiled));
        steps_of([off, on], |what, a, b| {
            assert_eq!(
                a, b,
                "fp8 {fp8} {what}: the tiled lm_head changed the logits"
            )
        });
    }
}

/// The FP8 GEMMs with x staged in shared memory as f16 (Tuning::x_smem_kb, the `*_xs`
/// kernels) against x loaded through L1 at every stage: the same f16 values into the same
/// MMAs, so the same logits bit for bit (bf16 runs too, on unchanged kernels). On bf16 x
/// (fp8_x_f16 off), which stages at every row count that fits; f16 x stages at 1 row only.
#[test]
#[ignore = "gpu"]
fn x_in_shared_memory_gives_the_same_logits() {
    let t = kernels::Tuning {
        x_smem_kb: 227,
        fp8_x_f16: false,
        ..Default::default()
    };
    for (m, k) in [(1, 1024), (3, 3072)] {
        for stages in [t.fp8_bulk_stages, t.fp8_bulk_stages_small] {
            let name = kernels::ops::skinny_kernel(&t, "skinny_gemm_fp8", (m, k), stages);
            assert!(name.ends_with("_xs"), "{name}");
        }
    }
    same_logits(
        |t, on| {
            t.x_smem_kb = if on { 227 } else { 0 };
            t.fp8_x_f16 = false;
        },
        "x in shared memory",
    );
}

/// Decode's inner norms folded into the skinny GEMMs around them (Tuning::norm_epilogue)
/// against the norm kernels: the normed x is rounded to bf16 before its row scale instead
/// of after, so the logits agree closely, not bit for bit. The decode steps (batch 1 and 3)
/// fold; the 10-token prefill does not.
#[test]
#[ignore = "gpu"]
fn folded_norms_keep_the_logits() {
    close_steps(
        |t, on| {
            t.norm_epilogue = if on {
                kernels::NormFold::On
            } else {
                kernels::NormFold::Off
            }
        },
        "folded norms",
    );
}

/// FP8 decode GEMMs reading x as f16 written by the norms and SwiGLU before them
/// (Tuning::fp8_x_f16, the `_xh` kernels) against converting bf16 x in every block: the
/// same f16 values into the same MMAs, so the same logits bit for bit. The norms stay
/// unfolded on both sides, so batch 1 and 3 both take it; bf16 weights never do.
#[test]
#[ignore = "gpu"]
fn f16_x_gives_the_same_logits() {
    let set = |t: &mut kernels::Tuning, on: bool| {
        t.fp8_x_f16 = on;
        t.norm_epilogue = kernels::NormFold::Off;
    };
    for fp8 in [false, true] {
        let [off, on] = ab_backends(fp8, set);
        for rows in [1, 3] {
            assert!(!off.decode_path(rows).f16_x, "fp8 {fp8} rows {rows}: off");
            assert_eq!(on.decode_path(rows).f16_x, fp8, "fp8 {fp8} rows {rows}: on");
        }
    }
    same_logits(set, "x as f16");
}

/// bf16 GEMMs at one row as fat blocks (Tuning::bf16_fat, skinny_fat.cu: one CTA per SM,
/// its rings sharing x staged once) against one block per ring: the same chunk order and
/// sums, so the same logits bit for bit. Batch 1 takes them (the model's gate|up and down
/// shapes included), batch 3 and FP8 never do.
#[test]
#[ignore = "gpu"]
fn fat_blocks_give_the_same_logits() {
    let set = |t: &mut kernels::Tuning, on: bool| {
        t.bf16_fat = if on {
            kernels::FatBlocks::All
        } else {
            kernels::FatBlocks::Off
        }
    };
    let (cfg, _) = small_model(false);
    let (hd, inter) = (cfg.hidden_size, cfg.intermediate_size);
    let mut on = kernels::Tuning::default();
    set(&mut on, true);
    for (op, n, k) in [
        ("skinny_gemm_bf16_swiglu", 2 * inter, hd),
        ("skinny_gemm_bf16", hd, inter),
    ] {
        assert!(
            kernels::ops::runs_fat(&on, op, (1, n, k), 132),
            "{op} 1 row"
        );
        assert!(
            !kernels::ops::runs_fat(&on, op, (3, n, k), 132),
            "{op} 3 rows"
        );
    }
    same_logits(set, "fat blocks");
}

/// The lean norm kernels (Tuning::norm_vec; hidden 1024 takes them) against the scalar
/// ones, bf16 and FP8, prefill and decode: the same formula with the sum of squares in
/// another order, so the logits agree to bf16 rounding.
#[test]
#[ignore = "gpu"]
fn lean_norm_kernels_match_the_scalar_ones() {
    // The A/B compares two kernels at this model's width (qwen3-0.6b: hidden 1024).
    let hidden = engine::presets::preset("qwen3-0.6b").unwrap().hidden_size;
    for (on, want) in [(false, "add_rmsnorm_rows"), (true, "add_rmsnorm_vec")] {
        let mut o = kernels::GpuOptions::from_env().unwrap();
        o.tuning.norm_vec = on;
        let g = kernels::Gpu::new(&o).unwrap();
        assert_eq!(kernels::ops::add_rmsnorm_kernel(&g, hidden), want);
    }
    close_steps(|t, on| t.norm_vec = on, "lean norms");
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
        let (a, b) = (
            fresh.logits_all_positions(&tokens).unwrap(),
            kept.logits_all_positions(&tokens).unwrap(),
        );
        assert!(
            a == b,
            "{preset}: prefill logits differ with the kept copies"
        );
    }
}

/// Run-ahead (`LATLAB_RUN_AHEAD`, graph.rs) against none: greedy decoding as the engine
/// drives it, with its hints, gives the same tokens. Three sequences on 16-token pages
/// whose tables grow only when the next position needs a page (as the scheduler's), so
/// steps cross page boundaries where nothing can be queued; one sequence leaves the batch
/// at step 12 (the queued step is not the next one); step 20 is asked twice (the second
/// time it is not the queued one either); the last step's hint says the sequences end.
/// The queued steps must have been used (`ahead_hits`), or the test proves nothing. Each
/// policy runs it: off; `sure` with rows that end only by length, which must queue, and
/// with rows that may stop on a token, which must not; `always` with the latter; `late`
/// as `sure`, and with a request on its way in the whole time, when it must queue nothing.
#[test]
#[ignore = "gpu"]
fn run_ahead_gives_the_same_tokens() {
    for fp8 in [false, true] {
        let (cfg, w) = small_model(fp8);
        let o = kernels::GpuOptions::from_env().unwrap();
        // (policy, rows end only by length, a request on its way in)
        let cases = [
            (RunAhead::Off, true, false),
            (RunAhead::Sure, true, false),
            (RunAhead::Sure, false, false),
            (RunAhead::Always, false, false),
            (RunAhead::Late, true, false),
            (RunAhead::Late, false, false),
            (RunAhead::Late, true, true),
        ];
        let runs: Vec<(Vec<Vec<u32>>, u64)> = cases
            .into_iter()
            .map(|(policy, only_length_ends, arriving)| {
                let on = format!("{policy:?}/{only_length_ends}/{arriving}");
                let mut be = CudaBackend::new(cfg.clone(), &w, 64, 16, &o).unwrap();
                be.set_run_ahead(policy);
                let arrivals = Arrivals::default();
                if arriving {
                    arrivals.sent();
                }
                be.watch_arrivals(arrivals);
                let mut seqs = [prompt(10, 1), prompt(14, 2), prompt(5, 3)];
                let mut tables: [Vec<u32>; 3] = [vec![], vec![], vec![]];
                let mut free = (0..64u32).rev().collect::<Vec<_>>();
                let grow = |t: &mut Vec<u32>, len: usize, free: &mut Vec<u32>| {
                    while t.len() * 16 < len {
                        t.push(free.pop().unwrap());
                    }
                };
                let hint = |may_continue| RowHint {
                    greedy: true,
                    may_continue,
                    only_length_ends,
                };
                // Prefill each prompt; its last position's token comes back.
                for i in 0..3 {
                    grow(&mut tables[i], seqs[i].len(), &mut free);
                    let c = [SeqChunk {
                        tokens: &seqs[i],
                        start_pos: 0,
                        block_table: &tables[i],
                        want_logits: true,
                    }];
                    let Next::Token(t) = be.forward_next(&c, &[hint(true)]).unwrap()[0] else {
                        panic!("greedy prefill gave logits");
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
                        assert_eq!(again, next, "fp8 {fp8} run-ahead {on}: step 20 again");
                        next = again;
                    }
                    for (&i, n) in live.iter().zip(next) {
                        let Next::Token(t) = n else {
                            panic!("greedy decode gave logits");
                        };
                        seqs[i].push(t);
                    }
                }
                (seqs.to_vec(), be.ahead_hits())
            })
            .collect();
        let (off, _) = &runs[0];
        for ((tokens, hits), (policy, only_length_ends, arriving)) in runs.iter().zip(cases) {
            let case = format!(
                "fp8 {fp8}, {policy:?}, only_length_ends {only_length_ends}, arriving {arriving}"
            );
            assert_eq!(tokens, off, "{case}: run-ahead changed the tokens");
            let may_queue = policy.queues(&RowHint {
                greedy: true,
                may_continue: true,
                only_length_ends,
            });
            // `late` launches nothing early while a request is on its way in.
            if may_queue && !(arriving && policy.launches_after_tokens()) {
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
