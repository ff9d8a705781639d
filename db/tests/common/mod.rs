//! Fixtures shared by the db tests; each test binary uses part of them.
#![allow(dead_code)]

use bench_types::*;

pub fn spec(concurrency: &[u32]) -> RunSpec {
    RunSpec {
        label: "fixture".into(),
        target: Target::External { base_url: "http://127.0.0.1:8000".into(), api_key_env: None },
        model: "Qwen/Qwen3-8B".into(),
        tokenizer: None,
        backend: Backend::OpenaiChat,
        dataset: Dataset::Random { input_len: 232, output_len: 220, range_ratio: 0.0, prefix_len: 0 },
        num_prompts: 3,
        load: LoadProfile {
            max_concurrency: concurrency.to_vec(),
            request_rate: None,
            request_rates: vec![],
            burstiness: 1.0,
        },
        sampling: Sampling::default(),
        seed: 0,
        warmup_requests: 0,
        request_timeout_s: 600.0,
        percentiles: vec![99.0],
        goodput: Goodput::default(),
        time_limit_s: None,
        ramp_up: None,
        disable_shuffle: false,
        no_oversample: false,
    }
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
