//! Quantizing a full-size model at load: time, and memory beyond the f32 weights already
//! held. In-place quantization adds one byte per projection weight (the codes) and a few
//! per-block scales; a second f32 copy of even one tensor would show as its size on top.
//!
//! Ignored (needs ~3 GB for qwen3-0.6b, ~42 GB for qwen3-8b); run on a big machine with
//! `LATLAB_FP8_PRESET=qwen3-8b cargo test -p engine --test fp8_quantize_memory -- --ignored --nocapture`.

use engine::weights::ModelWeights;
use std::time::Instant;

/// (VmRSS, VmHWM) of this process in bytes.
fn rss() -> (usize, usize) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = |key: &str| {
        s.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap()
            * 1024
    };
    (kb("VmRSS:"), kb("VmHWM:"))
}

#[test]
#[ignore = "large: a full-size model in memory"]
fn quantizing_at_load_adds_only_the_codes() {
    let preset = std::env::var("LATLAB_FP8_PRESET").unwrap_or_else(|_| "qwen3-0.6b".into());
    let cfg = engine::presets::preset(&preset).unwrap();
    let t = Instant::now();
    let mut w = ModelWeights::random(&cfg, 0).unwrap();
    let generated = t.elapsed();
    let (before, _) = rss();
    let t = Instant::now();
    w.quantize_fp8().unwrap();
    let quantized = t.elapsed();
    let (after, peak) = rss();
    let codes = engine::model_source::projection_param_count(&cfg);
    let largest = engine::tensor_names::tensor_specs(&cfg)
        .iter()
        .filter(|s| engine::tensor_names::is_projection(&s.name))
        .map(|s| s.numel() * 4)
        .max()
        .unwrap();
    eprintln!(
        "{preset}: random bf16 weights in {:.1} s, fp8 quantization in {:.1} s ({} threads); \
         RSS {:.2} GB -> {:.2} GB (peak {:.2} GB); codes {:.2} GB; largest f32 projection {:.2} GB",
        generated.as_secs_f64(),
        quantized.as_secs_f64(),
        rayon::current_num_threads(),
        before as f64 / 1e9,
        after as f64 / 1e9,
        peak as f64 / 1e9,
        codes as f64 / 1e9,
        largest as f64 / 1e9,
    );
    // Peak growth: the codes (+ scales, allocator slack), far below a second f32 copy of
    // the projections (4x the codes).
    let grown = peak.saturating_sub(before);
    assert!(grown < codes + codes / 10 + (64 << 20), "grew by {grown} bytes for {codes} bytes of codes");
}
