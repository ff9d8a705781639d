//! Tuning's parsing of the `LATLAB_*` variables.

use super::{Carveout, Tuning};

fn with(vars: &[(&str, &str)]) -> crate::Result<Tuning> {
    Tuning::from_lookup(|n| {
        vars.iter()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.to_string())
    })
}

#[test]
fn tuning_reads_every_variable() {
    let d = Tuning::default();
    assert_eq!(with(&[]).unwrap(), d);
    assert!(d.pdl && d.tiled_weights);
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
    ])
    .unwrap();
    assert!(!t.pdl && !t.tiled_weights);
    assert_eq!((d.bulk_stages, t.bulk_stages), (4, 6));
    assert_eq!((d.bulk_stages_small, t.bulk_stages_small), (6, 8));
    assert_eq!((d.bulk_stages_wide, t.bulk_stages_wide), (5, 3));
    assert_eq!((d.fp8_bulk_stages, t.fp8_bulk_stages), (2, 3));
    assert_eq!((d.fp8_bulk_stages_small, t.fp8_bulk_stages_small), (5, 6));
    assert_eq!((d.attention_blocks, t.attention_blocks), (384, 132));
    assert_eq!(
        (d.smem_carveout, t.smem_carveout),
        (Carveout::ATTENTION_MAX, Carveout::MAX_OUTSIDE_GEMMS)
    );
    let split = with(&[("LATLAB_SMEM_CARVEOUT", "-/58/100/-/0")]).unwrap();
    assert_eq!(
        split.smem_carveout.for_kernel("skinny_gemm_fp8_bulk_persistent"),
        Some(58)
    );
}

/// A switch is `0` or `1`: anything else (`yes`, `2`, an empty value, `true`) is an error
/// that names the variable, never silently on or off.
#[test]
fn a_bad_value_is_an_error_naming_the_variable() {
    for bad in ["yes", "2", "", "true", " 1"] {
        for var in ["LATLAB_PDL", "LATLAB_TILED_WEIGHTS"] {
            let e = with(&[(var, bad)]).unwrap_err().to_string();
            assert!(
                e.contains(&format!("{var}={bad:?}")) && e.contains("0 or 1"),
                "{e}"
            );
        }
    }
    for bad in ["1", "9", "four"] {
        let e = with(&[("LATLAB_BULK_STAGES", bad)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("LATLAB_BULK_STAGES=\"{bad}\"")) && e.contains("2..=8"),
            "{e}"
        );
    }
    let e = with(&[("LATLAB_ATTENTION_BLOCKS", "0")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("LATLAB_ATTENTION_BLOCKS=\"0\""), "{e}");
    let e = with(&[("LATLAB_SMEM_CARVEOUT", "1")])
        .unwrap_err()
        .to_string();
    assert!(e.contains("LATLAB_SMEM_CARVEOUT=\"1\""), "{e}");
}
