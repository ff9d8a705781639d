//! Tuning's parsing of the `LATLAB_*` variables and its resolutions per weights.

use super::{AttentionCluster, Carveout, FatBlocks, NormFold, TiledWeights, Tuning};

#[test]
fn tuning_reads_switches_and_names_a_bad_value() {
    let with = |vars: &[(&str, &str)]| {
        Tuning::from_lookup(|n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        })
    };
    assert_eq!(with(&[]).unwrap(), Tuning::default());
    let d = Tuning::default();
    assert!(d.pdl && d.prefill_attention && d.skinny_bulk_bf16 && d.skinny_bulk_fp8);
    assert_eq!(d.bulk_stages, 4);
    let t = with(&[
        ("LATLAB_PDL", "0"),
        ("LATLAB_PREFILL_ATTENTION", "0"),
        ("LATLAB_SKINNY_BULK_BF16", "0"),
        ("LATLAB_SKINNY_BULK_FP8", "0"),
        ("LATLAB_BULK_STAGES", "6"),
        ("LATLAB_BULK_STAGES_SMALL", "8"),
        ("LATLAB_BULK_STAGES_WIDE", "3"),
        ("LATLAB_FP8_BULK_STAGES", "3"),
        ("LATLAB_FP8_BULK_STAGES_SMALL", "6"),
        ("LATLAB_ATTENTION_EARLY", "0"),
        ("LATLAB_NORM_VEC", "0"),
        ("LATLAB_ATTENTION_BLOCKS", "132"),
        ("LATLAB_ATTENTION_CLUSTER", "0"),
        ("LATLAB_BULK_PERSISTENT", "0"),
        ("LATLAB_FP8_PERSISTENT_ROWS", "9"),
        ("LATLAB_SMEM_CARVEOUT", "max-outside-gemms"),
        ("LATLAB_X_SMEM_KB", "64"),
        ("LATLAB_ATTENTION_D32", "0"),
        ("LATLAB_TILED_WEIGHTS", "0"),
        ("LATLAB_ATTENTION_MMA", "0"),
        ("LATLAB_NORM_EPILOGUE", "0"),
        ("LATLAB_FP8_X_F16", "0"),
        ("LATLAB_TILED_LM_HEAD", "1"),
        ("LATLAB_BF16_FAT", "1"),
    ])
    .unwrap();
    assert_eq!((d.bf16_fat, t.bf16_fat), (FatBlocks::Off, FatBlocks::All));
    let fat = |v: &str| with(&[("LATLAB_BF16_FAT", v)]).map(|t| t.bf16_fat);
    assert_eq!(fat("large").unwrap(), FatBlocks::Large);
    assert_eq!(fat("small").unwrap(), FatBlocks::Small);
    assert_eq!(fat("reuse").unwrap(), FatBlocks::Reuse);
    let groups = |v: &str| with(&[("LATLAB_FAT_GROUPS", v)]).map(|t| t.fat_groups);
    assert_eq!((d.fat_groups, d.fat_groups_small), (3, 2));
    assert_eq!(groups("1").unwrap(), 1);
    let e = groups("4").unwrap_err().to_string();
    assert!(e.contains("LATLAB_FAT_GROUPS=\"4\""), "{e}");
    assert!(FatBlocks::Large.takes(false) && !FatBlocks::Large.takes(true));
    assert!(FatBlocks::Small.takes(true) && !FatBlocks::Small.takes(false));
    let e = fat("yes").unwrap_err().to_string();
    assert!(
        e.contains("LATLAB_BF16_FAT=\"yes\": expected 0, 1, large, small or reuse"),
        "{e}"
    );

    assert!(d.attention_mma && !t.attention_mma);
    assert!(d.fp8_x_f16 && !t.fp8_x_f16);
    // bf16 weights never read x as f16, and the resolved tuning says so.
    assert!(d.for_weights(true).fp8_x_f16 && !d.for_weights(false).fp8_x_f16);
    assert_eq!(
        (d.norm_epilogue, t.norm_epilogue),
        (NormFold::Fp8UpTo(1), NormFold::Off)
    );
    // The default folds FP8 batch 1 only; unresolved, nothing.
    let (d8, d16) = (d.for_weights(true), d.for_weights(false));
    assert_eq!(d8.norm_epilogue, NormFold::UpTo(1));
    assert!(d8.folds_norms(1) && !d8.folds_norms(2));
    assert!(!d16.folds_norms(1) && !d.folds_norms(1));
    assert!(!t.for_weights(true).folds_norms(1));
    let fold = |v: &str| with(&[("LATLAB_NORM_EPILOGUE", v)]).map(|t| t.norm_epilogue);
    let on = fold("1").unwrap().for_weights(false);
    assert!(on.folds(1) && on.folds(8));
    let up2 = fold("up_to_2").unwrap().for_weights(false);
    assert!(up2.folds(2) && !up2.folds(3));
    assert_eq!(fold("fp8_up_to_8").unwrap(), NormFold::Fp8UpTo(8));
    assert_eq!(fold("off").unwrap(), NormFold::Off);
    for bad in ["fp8", "up_to_0", "up_to_9", "fp8_up_to_", "up_to_x"] {
        let e = fold(bad).unwrap_err().to_string();
        assert!(
            e.contains(&format!("LATLAB_NORM_EPILOGUE={bad:?}"))
                && e.contains("0, 1, up_to_N or fp8_up_to_N with N from 1 to 8"),
            "{e}"
        );
    }
    // The names read back as they are set, in JSON too.
    for name in ["off", "on", "up_to_3", "fp8_up_to_1"] {
        let f = fold(name).unwrap();
        assert_eq!(f.to_string(), name);
        assert_eq!(serde_json::to_value(f).unwrap(), name);
    }

    assert!(!t.pdl && !t.prefill_attention && !t.skinny_bulk_bf16 && !t.skinny_bulk_fp8);
    assert_eq!((d.bulk_stages_small, t.bulk_stages_small), (6, 8));
    assert_eq!((d.bulk_stages_wide, t.bulk_stages_wide), (5, 3));
    assert_eq!((d.fp8_bulk_stages, t.fp8_bulk_stages), (2, 3));
    assert_eq!((d.fp8_bulk_stages_small, t.fp8_bulk_stages_small), (5, 6));
    assert!(d.attention_early_loads && !t.attention_early_loads);
    assert!(d.norm_vec && !t.norm_vec);
    assert_eq!(
        (d.attention_cluster, t.attention_cluster),
        (AttentionCluster::On, AttentionCluster::Off)
    );
    assert!(d.clusters() && !t.clusters());
    // A choice made explicitly is kept for either weights.
    assert!(d.for_weights(true).clusters() && d.for_weights(false).clusters());
    assert!(!t.for_weights(true).clusters() && !t.for_weights(false).clusters());
    let fp8 = with(&[("LATLAB_ATTENTION_CLUSTER", "fp8")]).unwrap();
    assert!(fp8.for_weights(true).clusters() && !fp8.for_weights(false).clusters());
    let e = with(&[("LATLAB_ATTENTION_CLUSTER", "yes")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("0, 1 or fp8"), "{e}");
    assert!(d.bulk_persistent && !t.bulk_persistent);
    assert_eq!((d.fp8_persistent_rows, t.fp8_persistent_rows), (1, 9));
    assert_eq!(
        (d.smem_carveout, t.smem_carveout),
        (Carveout::ATTENTION_MAX, Carveout::MAX_OUTSIDE_GEMMS)
    );
    assert_eq!((d.x_smem_kb, t.x_smem_kb), (25, 64));
    assert!(d.attention_d32 && !t.attention_d32);
    assert_eq!(
        (d.tiled_weights, t.tiled_weights),
        (TiledWeights::Bf16, TiledWeights::Off)
    );
    // The default tiles bf16 weights only.
    assert!(d.tiles_weights(false) && !d.tiles_weights(true));
    assert!(!t.tiles_weights(false) && !t.tiles_weights(true));
    // Only where the bulk pipeline runs.
    let regs16 = with(&[("LATLAB_SKINNY_BULK_BF16", "0")]).unwrap();
    assert!(!regs16.tiles_weights(false));
    let bf = with(&[("LATLAB_TILED_WEIGHTS", "bf16")]).unwrap();
    assert!(bf.tiles_weights(false) && !bf.tiles_weights(true));
    let all = with(&[("LATLAB_TILED_WEIGHTS", "1")]).unwrap();
    assert!(all.tiles_weights(true) && all.tiles_weights(false));
    let regs = with(&[
        ("LATLAB_TILED_WEIGHTS", "1"),
        ("LATLAB_SKINNY_BULK_FP8", "0"),
    ])
    .unwrap();
    assert!(
        !regs.tiles_weights(true),
        "the register pipeline reads row-major only"
    );
    // lm_head: tiled when asked for, and only where the bulk pipeline reads bf16 (t turns
    // that pipeline off).
    assert!(!d.tiles_lm_head());
    assert!(t.tiled_lm_head && !t.tiles_lm_head());
    assert!(
        with(&[("LATLAB_TILED_LM_HEAD", "1")])
            .unwrap()
            .tiles_lm_head()
    );
    let e = with(&[("LATLAB_TILED_LM_HEAD", "2")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("LATLAB_TILED_LM_HEAD=\"2\": expected 0 or 1"),
        "{e}"
    );
    let e = with(&[("LATLAB_TILED_WEIGHTS", "yes")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("0, bf16 or 1"), "{e}");
    let e = with(&[("LATLAB_X_SMEM_KB", "228")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("LATLAB_X_SMEM_KB=\"228\"") && e.contains("0..=227"),
        "{e}"
    );
    let e = with(&[("LATLAB_SMEM_CARVEOUT", "1")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("LATLAB_SMEM_CARVEOUT=\"1\""), "{e}");
    let split = with(&[("LATLAB_SMEM_CARVEOUT", "-/58/100/-/0")]).unwrap();
    assert_eq!(
        split.smem_carveout.for_kernel("skinny_gemm_fp8_bulk"),
        Some(58)
    );

    assert_eq!((d.attention_blocks, t.attention_blocks), (384, 132));
    assert_eq!(t.bulk_stages, 6);
    let e = with(&[("LATLAB_PDL", "yes")]).unwrap_err().to_string();
    assert!(
        e.contains("LATLAB_PDL=\"yes\"") && e.contains("0 or 1"),
        "{e}"
    );
    let e = with(&[("LATLAB_PREFILL_ATTENTION", "2")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("LATLAB_PREFILL_ATTENTION=\"2\""), "{e}");
    let e = with(&[("LATLAB_SKINNY_BULK_FP8", "")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("LATLAB_SKINNY_BULK_FP8=\"\""), "{e}");
    for bad in ["1", "9", "four"] {
        let e = with(&[("LATLAB_BULK_STAGES", bad)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("LATLAB_BULK_STAGES=\"{bad}\"")) && e.contains("2..=8"),
            "{e}"
        );
    }
    let e = with(&[("LATLAB_FP8_PERSISTENT_ROWS", "0")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("LATLAB_FP8_PERSISTENT_ROWS=\"0\"") && e.contains("1..=9"),
        "{e}"
    );
}
