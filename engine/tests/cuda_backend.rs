//! The CUDA backend against the CPU reference backend on the tiny presets (GPU machine
//! only: `cargo test -p engine --test cuda_backend -- --ignored`): whole-sequence logits,
//! a batched step mixing prefill chunks and decode tokens on scattered pages, and greedy
//! decoding; plus the HF goldens' greedy tokens.
//!
//! Tolerance: the GPU rounds each GEMV input (normed activations, attention output, SwiGLU
//! output) and the KV cache to bf16 (2^-9 relative), where the CPU keeps f32. Through 2-3
//! layers that moves logits by ~1 % of the row's largest magnitude; we allow 5 %, which a
//! real bug (wrong RoPE pair, missing norm, wrong page) exceeds many times over. Greedy
//! tokens must agree wherever the CPU's top-2 gap is larger than that tolerance.

use engine::model::cpu::CpuBackend;
use engine::model::cuda::CudaBackend;
use engine::model::{Backend, Next, SeqChunk};
use engine::sampling::argmax;
use engine::weights::ModelWeights;

const PRESETS: [&str; 6] = [
    "tiny",
    "tiny-untied",
    "tiny-mqa",
    "tiny+fp8",
    "tiny-untied+fp8",
    "tiny-mqa+fp8",
];
const TOL: f32 = 0.05;

/// CPU and CUDA backends over the same random weights; with "+fp8" in the name, the
/// projections are quantized to FP8 first (the CPU then runs their exact dequantization,
/// the GPU the codes and scales: the same weights in both).
fn pair(name: &str, seed: u64) -> (CpuBackend, CudaBackend) {
    let (preset, fp8) = match name.strip_suffix("+fp8") {
        Some(p) => (p, true),
        None => (name, false),
    };
    let cfg = engine::presets::preset(preset).unwrap();
    let mut w = ModelWeights::random(&cfg, seed).unwrap();
    if fp8 {
        w.quantize_fp8().unwrap();
    }
    let gpu = CudaBackend::new(
        cfg.clone(),
        &w,
        64,
        16,
        &kernels::GpuOptions::from_env().unwrap(),
    )
    .unwrap();
    (CpuBackend::new(cfg, w, 64, 16), gpu)
}

/// Max |gpu - cpu| over the row relative to the row's max |cpu|; asserts it is within TOL
/// and that argmax agrees unless the CPU's top-2 gap is within the tolerance.
fn compare(what: &str, gpu: &[f32], cpu: &[f32]) -> f32 {
    let scale = cpu.iter().fold(0f32, |m, v| m.max(v.abs()));
    let err = gpu
        .iter()
        .zip(cpu)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()))
        / scale;
    assert!(
        err <= TOL,
        "{what}: max |gpu - cpu| = {err:.3e} x max|cpu| {scale}"
    );
    let (ag, ac) = (argmax(gpu), argmax(cpu));
    if ag != ac {
        let gap = cpu[ac as usize] - cpu[ag as usize];
        assert!(
            gap <= 2.0 * TOL * scale,
            "{what}: argmax gpu {ag} vs cpu {ac}, gap {gap}"
        );
        eprintln!("{what}: near-tie argmax differs (gap {gap:.3e})");
    }
    err
}

/// (max |a - b|, max |a|) of two logits rows.
fn diff_and_scale(a: &[f32], b: &[f32]) -> (f32, f32) {
    let scale = a.iter().fold(0f32, |m, v| m.max(v.abs()));
    let diff = a.iter().zip(b).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
    (diff, scale)
}

/// Two kernel paths' logits rows agree within 2 % of the row's largest magnitude, and in
/// argmax unless the top two are closer than their difference. Returns the difference.
fn close_logits(what: &str, a: &[f32], b: &[f32]) -> f32 {
    let (diff, scale) = diff_and_scale(a, b);
    assert!(diff <= 0.02 * scale, "{what}: {diff} apart (scale {scale})");
    let top = argmax(a) as usize;
    let second = a
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != top)
        .fold(f32::NEG_INFINITY, |m, (_, &v)| m.max(v));
    if a[top] - second > 2.0 * diff {
        assert_eq!(argmax(a), argmax(b), "{what}: argmax");
    }
    diff
}

fn prompt(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| (i * 7919 + salt * 104_729) % 151_000)
        .collect()
}

#[test]
#[ignore = "gpu"]
fn tiny_presets_all_positions_match_cpu() {
    for p in PRESETS {
        let (mut cpu, mut gpu) = pair(p, 7);
        let toks = prompt(45, 1);
        let (a, b) = (
            gpu.logits_all_positions(&toks).unwrap(),
            cpu.logits_all_positions(&toks).unwrap(),
        );
        let worst = a
            .iter()
            .zip(&b)
            .enumerate()
            .map(|(i, (x, y))| compare(&format!("{p} pos {i}"), x, y))
            .fold(0f32, f32::max);
        eprintln!("{p:<12} all-positions logits: max err {worst:.3e} x row max");
    }
}

/// Three sequences on scattered pages: prefill in uneven chunks alongside decode tokens,
/// then 20 batched decode steps feeding each backend its own greedy tokens.
#[test]
#[ignore = "gpu"]
fn tiny_presets_batched_chunked_decode_matches_cpu() {
    for p in PRESETS {
        let (mut cpu, mut gpu) = pair(p, 11);
        let tables: [Vec<u32>; 3] = [
            (0..8).rev().collect(),
            (8..16).collect(),
            vec![40, 3, 63, 20, 21, 50, 9, 30],
        ];
        let prompts = [prompt(1, 2), prompt(37, 3), prompt(70, 4)];
        let mut seqs: Vec<Vec<u32>> = prompts.to_vec();
        let mut done = [0usize; 3];
        let mut worst = 0f32;
        let mut agree = 0;
        let mut total = 0;
        for step in 0..26 {
            // Chunk of at most 16 new tokens per sequence per step (chunked prefill).
            let ends: Vec<usize> = (0..3).map(|i| seqs[i].len().min(done[i] + 16)).collect();
            let chunks: Vec<SeqChunk> = (0..3)
                .map(|i| SeqChunk {
                    tokens: &seqs[i][done[i]..ends[i]],
                    start_pos: done[i],
                    block_table: &tables[i],
                    want_logits: ends[i] == seqs[i].len(),
                })
                .collect();
            let (g, c) = (gpu.forward(&chunks).unwrap(), cpu.forward(&chunks).unwrap());
            assert_eq!(g.len(), c.len());
            let want: Vec<usize> = (0..3).filter(|&i| ends[i] == seqs[i].len()).collect();
            for (k, &i) in want.iter().enumerate() {
                worst = worst.max(compare(&format!("{p} step {step} seq {i}"), &g[k], &c[k]));
                total += 1;
                agree += (argmax(&g[k]) == argmax(&c[k])) as usize;
            }
            done.copy_from_slice(&ends[..3]);
            // Both backends continue with the CPU's token so their caches stay comparable.
            for (k, &i) in want.iter().enumerate() {
                seqs[i].push(argmax(&c[k]));
            }
        }
        eprintln!(
            "{p:<12} batched/chunked steps: max err {worst:.3e} x row max, argmax agree {agree}/{total}"
        );
        assert!(
            agree * 10 >= total * 9,
            "{p}: argmax agreed only {agree}/{total}"
        );
    }
}

/// Decode through CUDA graphs (padded to 1/2/4/8 rows) gives the logits of eager launches
/// (padding rows live on their own page). Batch sizes 1, 2, 3, 5 and 8 exercise every
/// graph and the padding.
#[test]
#[ignore = "gpu"]
fn decode_graphs_equal_eager_launches() {
    let cfg = engine::presets::preset("tiny-untied").unwrap();
    let w = ModelWeights::random(&cfg, 5).unwrap();
    let opts = kernels::GpuOptions::from_env().unwrap();
    let mut eager = CudaBackend::new(cfg.clone(), &w, 64, 16, &opts).unwrap();
    eager.set_graphs(false);
    let mut graphs = CudaBackend::new(cfg, &w, 64, 16, &opts).unwrap();
    graphs.set_graphs(true);
    let tables: Vec<Vec<u32>> = (0..8)
        .map(|i| (0..8).map(|j| (j * 8 + i) as u32).collect())
        .collect();
    let mut seqs: Vec<Vec<u32>> = (0..8).map(|i| prompt(5 + 3 * i, i as u32)).collect();
    let mut done = [0usize; 8];
    let mut steps = 0;
    for &batch in &[8usize, 1, 2, 3, 5, 8, 8, 3] {
        // Prefill (eager in both) any sequence of this batch not yet run, then one decode.
        for phase in 0..2 {
            let chunks: Vec<SeqChunk> = (0..batch)
                .filter(|&i| (phase == 0) == (done[i] + 1 < seqs[i].len()))
                .map(|i| SeqChunk {
                    tokens: &seqs[i][done[i]..],
                    start_pos: done[i],
                    block_table: &tables[i],
                    want_logits: true,
                })
                .collect();
            if chunks.is_empty() {
                continue;
            }
            let ids: Vec<usize> = (0..batch)
                .filter(|&i| (phase == 0) == (done[i] + 1 < seqs[i].len()))
                .collect();
            let (a, b) = (
                eager.forward(&chunks).unwrap(),
                graphs.forward(&chunks).unwrap(),
            );
            // Equal up to f32 summation order: a graph pads 3 rows to 4 (5 to 8), which can
            // move a linear from the GEMV kernel to cuBLAS; 1e-4 of the row's scale is ~100x
            // that and far below any real difference.
            for (ra, rb) in a.iter().zip(&b) {
                let (diff, scale) = diff_and_scale(ra, rb);
                assert!(
                    diff <= 1e-4 * scale,
                    "batch {batch} phase {phase}: graph vs eager {diff} (scale {scale})"
                );
                assert_eq!(
                    argmax(ra),
                    argmax(rb),
                    "batch {batch} phase {phase}: argmax"
                );
            }
            // The same step again (it rewrites identical K/V), greedy: tokens picked on the
            // GPU, in the graph and eagerly, equal the host's argmax of the logits.
            let greedy = vec![true; chunks.len()];
            for (name, be) in [("eager", &mut eager), ("graph", &mut graphs)] {
                let next = be.forward_next(&chunks, &greedy).unwrap();
                let want: Vec<Next> = b.iter().map(|r| Next::Token(argmax(r))).collect();
                assert_eq!(
                    next, want,
                    "batch {batch} phase {phase}: {name} greedy tokens"
                );
            }
            for (k, &i) in ids.iter().enumerate() {
                done[i] = seqs[i].len();
                seqs[i].push(argmax(&a[k]));
            }
            steps += 1;
        }
    }
    eprintln!("decode graphs ~= eager over {steps} steps (batches 1, 2, 3, 5, 8)");
}

/// The tensor-core prefill attention (Tuning::prefill_attention) against the split kernel
/// through the whole backend, on Qwen3-0.6B's head geometry (head_dim 128, 16 q / 8 kv
/// heads; the tiny presets' head dims are below what the kernel takes), 2 layers of random
/// weights. One step batches two fresh prompts with a chunk that continues a third
/// sequence (start_pos 11), so 16-row blocks straddle sequences and cached positions.
/// Logits within 2 % of the row's scale (the kernel rounds P to bf16), same argmax where
/// the top two are further apart than the difference.
#[test]
#[ignore = "gpu"]
fn prefill_attention_kernel_gives_the_split_kernels_logits() {
    let mut cfg = engine::presets::preset("qwen3-0.6b").unwrap();
    cfg.num_hidden_layers = 2;
    let w = ModelWeights::random(&cfg, 9).unwrap();
    let base = kernels::GpuOptions::from_env().unwrap();
    let mut backends = [false, true].map(|on| {
        let mut o = base.clone();
        o.tuning.prefill_attention = on;
        CudaBackend::new(cfg.clone(), &w, 64, 16, &o).unwrap()
    });
    let tables: [Vec<u32>; 3] = [vec![40, 3, 17], vec![9, 22], vec![5, 61]];
    let seqs = [prompt(37, 1), prompt(20, 2), prompt(30, 3)];
    let first = [SeqChunk {
        tokens: &seqs[2][..11],
        start_pos: 0,
        block_table: &tables[2],
        want_logits: true,
    }];
    let step = [
        SeqChunk {
            tokens: &seqs[0],
            start_pos: 0,
            block_table: &tables[0],
            want_logits: true,
        },
        SeqChunk {
            tokens: &seqs[1],
            start_pos: 0,
            block_table: &tables[1],
            want_logits: true,
        },
        SeqChunk {
            tokens: &seqs[2][11..],
            start_pos: 11,
            block_table: &tables[2],
            want_logits: true,
        },
    ];
    let [split, tc] = &mut backends;
    for (what, chunks) in [("first chunk", &first[..]), ("mixed step", &step[..])] {
        let (a, b) = (split.forward(chunks).unwrap(), tc.forward(chunks).unwrap());
        assert_eq!(a.len(), b.len());
        for (i, (ra, rb)) in a.iter().zip(&b).enumerate() {
            close_logits(
                &format!("{what} row {i}: prefill kernel vs split kernel"),
                ra,
                rb,
            );
        }
        eprintln!("{what}: {} rows agree", a.len());
    }
}

/// Two backends over the same random weights (qwen3-0.6b's shape, 2 layers; FP8 with
/// `fp8`) that differ in one tuning switch (`set(tuning, false / true)`): a prefill of 10
/// tokens, then 5 decode steps (graphs) over growing contexts, at batches 1 and 3. `judge`
/// gets each step's logits from both, and a label.
fn ab_steps(
    fp8: bool,
    set: impl Fn(&mut kernels::Tuning, bool),
    mut judge: impl FnMut(&str, &[Vec<f32>], &[Vec<f32>]),
) {
    let mut cfg = engine::presets::preset("qwen3-0.6b").unwrap();
    cfg.num_hidden_layers = 2;
    let mut w = ModelWeights::random(&cfg, 5).unwrap();
    if fp8 {
        w.quantize_fp8().unwrap();
    }
    let base = kernels::GpuOptions::from_env().unwrap();
    let mut backends = [false, true].map(|on| {
        let mut o = base.clone();
        set(&mut o.tuning, on);
        CudaBackend::new(cfg.clone(), &w, 64, 16, &o).unwrap()
    });
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

/// `ab_steps` for a switch that must not change a bit: bf16 and FP8 weights.
fn same_logits(set: impl Fn(&mut kernels::Tuning, bool) + Copy, change: &str) {
    for fp8 in [false, true] {
        ab_steps(fp8, set, |what, a, b| {
            assert_eq!(a, b, "fp8 {fp8} {what}: {change} changed the logits")
        });
    }
}

/// Decode attention reading the settled K/V before its wait (Tuning::attention_early_loads)
/// against waiting first: the same logits, bit for bit (only the time of the loads moves).
#[test]
#[ignore = "gpu"]
fn early_attention_loads_give_the_same_logits() {
    same_logits(|t, on| t.attention_early_loads = on, "early K/V loads");
}

/// The FP8 GEMMs with x staged in shared memory as f16 (Tuning::x_smem_kb, the `*_xs`
/// kernels) against x loaded through L1 at every stage: the same f16 values into the same
/// MMAs, so the same logits bit for bit (bf16 runs too, on unchanged kernels).
#[test]
#[ignore = "gpu"]
fn x_in_shared_memory_gives_the_same_logits() {
    let t = kernels::Tuning {
        x_smem_kb: 227,
        ..Default::default()
    };
    for (m, k) in [(1, 1024), (3, 3072)] {
        for stages in [t.fp8_bulk_stages, t.fp8_bulk_stages_small] {
            let name = kernels::ops::skinny_kernel(&t, "skinny_gemm_fp8", (m, k), stages);
            assert!(name.ends_with("_xs"), "{name}");
        }
    }
    same_logits(
        |t, on| t.x_smem_kb = if on { 227 } else { 0 },
        "x in shared memory",
    );
}

/// Decode attention's fast scores (Tuning::attention_d32: eight lanes per position, K in
/// shared memory; qwen3-0.6b's geometry takes the `_d128_g4` kernel) against the pair
/// layout: the dot products sum in another order, so the logits agree to f32 rounding,
/// not bit for bit.
#[test]
#[ignore = "gpu"]
fn fast_attention_scores_keep_the_logits() {
    let on = kernels::Tuning {
        attention_d32: true,
        ..Default::default()
    };
    let c = engine::presets::preset("qwen3-0.6b").unwrap();
    let d = kernels::ops::AttnDims {
        heads: c.num_attention_heads,
        kv_heads: c.num_key_value_heads,
        head_dim: c.head_dim,
    };
    assert_eq!(
        kernels::ops::attention_kernel(&on, d, false),
        "decode_attention_d128_g4"
    );
    for fp8 in [false, true] {
        ab_steps(
            fp8,
            |t, on| t.attention_d32 = on,
            |what, a, b| {
                for (x, y) in a.iter().zip(b) {
                    close_logits(&format!("fp8 {fp8} {what}"), x, y);
                }
            },
        );
    }
}

/// Decode attention merging its splits inside thread block clusters
/// (Tuning::attention_cluster) against the merge kernel, at the same split counts (a block
/// target of 64: 8 splits at batch 1, 3 at batch 3, both taken by the cluster when on): the
/// same operations in the same order, so the same logits bit for bit.
#[test]
#[ignore = "gpu"]
fn cluster_merged_attention_matches_the_merge_kernel() {
    use kernels::ops;
    let set = |t: &mut kernels::Tuning, on: bool| {
        t.attention_blocks = 64;
        t.attention_cluster = if on {
            kernels::gpu::AttentionCluster::On
        } else {
            kernels::gpu::AttentionCluster::Off
        };
        // The merge-kernel side in the clusters' pair layout, not the `_d32` scores.
        t.attention_d32 = false;
    };
    // Else the A/B compares a path with itself.
    for (rows, want) in [(1, 8), (3, 3)] {
        let mut t = kernels::Tuning::default();
        set(&mut t, true);
        assert_eq!(ops::split_count(&t, rows, 8), want);
        assert!(ops::uses_cluster(&t, want));
        set(&mut t, false);
        assert_eq!(ops::split_count(&t, rows, 8), want);
        assert!(!ops::uses_cluster(&t, want));
    }
    same_logits(set, "the cluster merge");
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
    for fp8 in [false, true] {
        ab_steps(
            fp8,
            |t, on| t.norm_vec = on,
            |what, a, b| {
                for (i, (ra, rb)) in a.iter().zip(b).enumerate() {
                    close_logits(&format!("fp8 {fp8} {what} row {i}: lean norms"), ra, rb);
                }
            },
        );
    }
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
