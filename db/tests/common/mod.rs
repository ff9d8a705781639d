//! Fixtures shared by the db tests; each test binary uses part of them.
#![allow(dead_code)]

use bench_types::*;

/// A run of 3 random prompts against an external URL at each of `concurrency`; every other
/// field as a spec that names only these gets it (the serde defaults).
pub fn spec(concurrency: &[u32]) -> RunSpec {
    serde_json::from_value(serde_json::json!({
        "label": "fixture",
        "target": {"kind": "external", "base_url": "http://127.0.0.1:8000"},
        "model": "Qwen/Qwen3-8B",
        "dataset": {"kind": "random", "input_len": 232, "output_len": 220},
        "num_prompts": 3,
        "load": {"max_concurrency": concurrency},
    }))
    .unwrap()
}

pub fn record(index: u32, chunks: Vec<f64>, tokens: Option<Vec<u32>>) -> RequestRecord {
    RequestRecord {
        index,
        dispatch_offset_s: index as f64 * 0.5,
        success: true,
        error: None,
        input_tokens: 232,
        output_tokens: chunks.len() as u32,
        ttft_s: chunks.first().copied(),
        e2el_s: chunks.last().copied(),
        chunk_offsets_s: chunks,
        chunk_tokens: tokens,
    }
}

pub fn report(spec: RunSpec, requests: Vec<RequestRecord>) -> BenchReport {
    let summary = Summary {
        completed: requests.iter().filter(|r| r.success).count() as u32,
        failed: requests.iter().filter(|r| !r.success).count() as u32,
        max_concurrency: spec.load.max_concurrency.first().copied(),
        duration_s: 1.5,
        ttft: Stats { mean_ms: 12.5, median_ms: 12.0, std_ms: 1.0, percentiles: vec![(99.0, 15.0)] },
        tpot: Stats { mean_ms: 3.7, median_ms: 3.7, std_ms: 0.1, percentiles: vec![(99.0, 3.9)] },
        output_throughput: 270.0,
        ..Summary::default()
    };
    BenchReport {
        spec,
        target_info: TargetInfo {
            models: Some(serde_json::json!({"data": [{"id": "m"}]})),
            engine_info: None,
        },
        started_at: chrono::DateTime::from_timestamp(1_790_000_000, 0).unwrap(),
        summary,
        requests,
        notes: vec!["weights: random".into()],
        speculative: None,
    }
}
