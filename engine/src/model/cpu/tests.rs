//! Backend-level invariants that need no golden data: paged, chunked and batched runs give
//! the same logits as one whole-sequence run.

use super::*;
use crate::presets::preset;

fn backend(name: &str) -> CpuBackend {
    let cfg = preset(name).unwrap();
    let w = ModelWeights::random(&cfg, 3).unwrap();
    CpuBackend::new(cfg, w, 64, 4)
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// Chunked prefill on scattered pages, then decode, batched with another sequence, must
/// reproduce the single-pass logits. Tolerance 1e-4: the only difference is f32 summation
/// order (GEMV vs SGEMM paths), ~1e-6 relative on logits of magnitude ~1-10.
#[test]
fn chunked_paged_batched_equals_single_pass() {
    for name in ["tiny", "tiny-untied", "tiny-mqa"] {
        let mut b = backend(name);
        let toks: Vec<u32> = vec![9707, 11, 1879, 0, 151644, 77091, 198, 3838, 374, 220, 17];
        let reference = b.logits_all_positions(&toks).unwrap();
        // Sequence A on pages 20, 7, 33; sequence B (different tokens) on pages 1, 2, 3, 4.
        let table_a = [20u32, 7, 33];
        let table_b = [1u32, 2, 3, 4];
        let toks_b: Vec<u32> = (100..113).collect();
        let out = b
            .forward(&[
                SeqChunk { tokens: &toks[..5], start_pos: 0, block_table: &table_a, want_logits: false },
                SeqChunk { tokens: &toks_b, start_pos: 0, block_table: &table_b, want_logits: true },
            ])
            .unwrap();
        assert_eq!(out.len(), 1);
        let out = b
            .forward(&[SeqChunk {
                tokens: &toks[5..10],
                start_pos: 5,
                block_table: &table_a,
                want_logits: true,
            }])
            .unwrap();
        assert!(
            max_diff(&out[0], &reference[9]) < 1e-4,
            "{name} chunk: {}",
            max_diff(&out[0], &reference[9])
        );
        let out = b
            .forward(&[SeqChunk {
                tokens: &toks[10..],
                start_pos: 10,
                block_table: &table_a,
                want_logits: true,
            }])
            .unwrap();
        assert!(
            max_diff(&out[0], &reference[10]) < 1e-4,
            "{name} decode: {}",
            max_diff(&out[0], &reference[10])
        );
        // Logits differ between positions: the model is not degenerate.
        assert!(max_diff(&reference[9], &reference[10]) > 0.1);
    }
}

#[test]
fn bad_inputs_fail_the_step_cleanly() {
    let mut b = backend("tiny");
    let err = b.forward(&[SeqChunk {
        tokens: &[1, 2, 3, 4, 5],
        start_pos: 0,
        block_table: &[0],
        want_logits: true,
    }]);
    assert!(err.is_err());
    let err =
        b.forward(&[SeqChunk { tokens: &[999_999], start_pos: 0, block_table: &[0], want_logits: true }]);
    assert!(err.unwrap_err().to_string().contains("vocab_size"));
}
