//! The CUDA backend's attention paths against each other (GPU machine only: `cargo test -p
//! engine --test cuda_attention_paths -- --ignored`): each attention `Tuning` switch
//! (prefill kernel, early K/V loads, fast scores, tensor cores, cluster merges) through
//! whole prefill and decode steps. cuda_paths holds the other switches. A switch that only
//! moves work in time must not change a bit; one that sums in another order must stay
//! within `close_logits`.

mod cuda_common;

use cuda_common::ab::{close_steps, same_logits, small_attention_dims};
use cuda_common::logits::{close_logits, prompt};
use engine::model::cuda::CudaBackend;
use engine::model::{Backend, SeqChunk};
use engine::weights::ModelWeights;

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

/// Decode attention reading the settled K/V before its wait (Tuning::attention_early_loads)
/// against waiting first: the same logits, bit for bit (only the time of the loads moves).
#[test]
#[ignore = "gpu"]
fn early_attention_loads_give_the_same_logits() {
    same_logits(|t, on| t.attention_early_loads = on, "early K/V loads");
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
        attention_mma: false,
        ..Default::default()
    };
    assert_eq!(
        kernels::ops::attention_kernel(&on, small_attention_dims(), false),
        "decode_attention_d128_g4"
    );
    close_steps(
        |t, on| {
            t.attention_mma = false;
            t.attention_d32 = on;
        },
        "fast scores",
    );
}

/// Decode attention on the tensor cores (Tuning::attention_mma, the default) against the
/// CUDA-core kernel it replaced (`_d128_g4` at qwen3-0.6b's geometry): P is rounded to bf16
/// for P V and the dot products sum in another order, so the logits agree closely, not bit
/// for bit.
#[test]
#[ignore = "gpu"]
fn tensor_core_attention_keeps_the_logits() {
    assert_eq!(
        kernels::ops::attention_kernel(&kernels::Tuning::default(), small_attention_dims(), false),
        "decode_attention_mma"
    );
    close_steps(|t, on| t.attention_mma = on, "tensor-core attention");
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
        // The merge-kernel side in the clusters' pair layout, not the `_d32` scores or the
        // tensor cores.
        t.attention_d32 = false;
        t.attention_mma = false;
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

/// The tensor-core attention merging its splits in clusters against the same kernel with
/// the merge kernel, as the test above for the CUDA-core pair: the same logits bit for bit.
#[test]
#[ignore = "gpu"]
fn tensor_core_attention_in_clusters_matches_the_merge_kernel() {
    use kernels::ops;
    let set = |t: &mut kernels::Tuning, on: bool| {
        t.attention_blocks = 64;
        t.attention_mma = true;
        t.attention_cluster = if on {
            kernels::gpu::AttentionCluster::On
        } else {
            kernels::gpu::AttentionCluster::Off
        };
    };
    let mut t = kernels::Tuning::default();
    set(&mut t, true);
    assert!(ops::uses_cluster(&t, ops::split_count(&t, 1, 8)));
    assert_eq!(
        ops::attention_kernel(&t, small_attention_dims(), true),
        "decode_attention_mma_cluster"
    );
    same_logits(set, "the tensor-core attention's cluster merge");
}
