//! Tuning's parsing of the `LATLAB_*` variables.

use super::{Carveout, Tuning};

fn with(vars: &[(&str, &str)]) -> crate::Result<Tuning> {
    Tuning::from_lookup(|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| v.to_string()))
}

#[test]
fn tuning_reads_every_variable() {
    let d = Tuning::default();
    assert_eq!(with(&[]).unwrap(), d);
    assert!(d.pdl && d.tiled_weights && d.wide_fp8_copies && d.graphs && d.run_ahead && !d.step_timing);
    let t = with(&[
        ("LATLAB_PDL", "0"),
        ("LATLAB_BULK_STAGES", "6"),
        ("LATLAB_BULK_STAGES_SMALL", "8"),
        ("LATLAB_BULK_STAGES_WIDE", "3"),
        ("LATLAB_FP8_BULK_STAGES", "3"),
        ("LATLAB_FP8_BULK_STAGES_SMALL", "6"),
        ("LATLAB_ATTENTION_BLOCKS", "132"),
        ("LATLAB_SMEM_CARVEOUT", "max-outside-gemms"),
        ("LATLAB_TILED_WEIGHTS", "0"),
        ("LATLAB_WIDE_FP8_COPIES", "0"),
        ("LATLAB_CUDA_GRAPHS", "0"),
        ("LATLAB_RUN_AHEAD", "0"),
        ("LATLAB_STEP_TIMING", "1"),
    ])
    .unwrap();
    assert!(!t.pdl && !t.tiled_weights && !t.wide_fp8_copies && !t.graphs && !t.run_ahead && t.step_timing);
    assert_eq!((d.bulk_stages, t.bulk_stages), (4, 6));
    assert_eq!((d.bulk_stages_small, t.bulk_stages_small), (6, 8));
    assert_eq!((d.bulk_stages_wide, t.bulk_stages_wide), (5, 3));
    assert_eq!((d.fp8_bulk_stages, t.fp8_bulk_stages), (2, 3));
    assert_eq!((d.fp8_bulk_stages_small, t.fp8_bulk_stages_small), (5, 6));
    assert_eq!((d.attention_blocks, t.attention_blocks), (384, 132));
    assert_eq!((d.smem_carveout, t.smem_carveout), (Carveout::ATTENTION_MAX, Carveout::MAX_OUTSIDE_GEMMS));
    let split = with(&[("LATLAB_SMEM_CARVEOUT", "-/58/100/-/0")]).unwrap();
    assert_eq!(split.smem_carveout.for_kernel("skinny_gemm_fp8_bulk_persistent"), Some(58));
}

/// A switch is `0` or `1`: anything else (`yes`, `2`, an empty value, `true`) is an error
/// that names the variable, never silently on or off.
#[test]
fn a_bad_value_is_an_error_naming_the_variable() {
    for bad in ["yes", "2", "", "true", " 1"] {
        for var in [
            "LATLAB_PDL",
            "LATLAB_TILED_WEIGHTS",
            "LATLAB_WIDE_FP8_COPIES",
            "LATLAB_CUDA_GRAPHS",
            "LATLAB_RUN_AHEAD",
            "LATLAB_STEP_TIMING",
        ] {
            let e = with(&[(var, bad)]).unwrap_err().to_string();
            assert!(e.contains(&format!("{var}={bad:?}")) && e.contains("0 or 1"), "{e}");
        }
    }
    for bad in ["1", "9", "four"] {
        let e = with(&[("LATLAB_BULK_STAGES", bad)]).unwrap_err().to_string();
        assert!(e.contains(&format!("LATLAB_BULK_STAGES=\"{bad}\"")) && e.contains("2..=8"), "{e}");
    }
    let e = with(&[("LATLAB_ATTENTION_BLOCKS", "0")]).unwrap_err().to_string();
    assert!(e.contains("LATLAB_ATTENTION_BLOCKS=\"0\""), "{e}");
    let e = with(&[("LATLAB_SMEM_CARVEOUT", "1")]).unwrap_err().to_string();
    assert!(e.contains("LATLAB_SMEM_CARVEOUT=\"1\""), "{e}");
}

/// /v1/engine/info serves the tuning with every result: each knob under its field's name.
#[test]
fn every_knob_is_named_in_json() {
    let v = serde_json::to_value(Tuning::default()).unwrap();
    for (name, want) in [
        ("pdl", serde_json::json!(true)),
        ("bulk_stages", serde_json::json!(4)),
        ("bulk_stages_small", serde_json::json!(6)),
        ("bulk_stages_wide", serde_json::json!(5)),
        ("fp8_bulk_stages", serde_json::json!(2)),
        ("fp8_bulk_stages_small", serde_json::json!(5)),
        ("attention_blocks", serde_json::json!(384)),
        ("tiled_weights", serde_json::json!(true)),
        ("wide_fp8_copies", serde_json::json!(true)),
        ("graphs", serde_json::json!(true)),
        ("run_ahead", serde_json::json!(true)),
        ("step_timing", serde_json::json!(false)),
    ] {
        assert_eq!(v[name], want, "{name}");
    }
    assert_eq!(v["smem_carveout"]["attention"], 100);
    assert!(v["smem_carveout"]["bf16_gemm"].is_null());
    assert_eq!(v.as_object().unwrap().len(), 13, "a knob without a check here: {v}");
}
