//! `--save-result` JSON with vLLM's key names (`vllm bench serve` v0.11, plus current
//! vLLM's `backend` and ramp-up keys), so existing tooling reads latlab's files.
//! latlab-only keys are prefixed `latlab_`. Not included: `generated_texts` (latlab does
//! not keep generated text).

use bench_types::{BenchReport, MetricKind, Stats};
use serde_json::{Map, Value, json};

fn put_stats(m: &mut Map<String, Value>, key: &str, s: &Stats) {
    m.insert(format!("mean_{key}_ms"), json!(s.mean_ms));
    m.insert(format!("median_{key}_ms"), json!(s.median_ms));
    m.insert(format!("std_{key}_ms"), json!(s.std_ms));
    for (p, v) in &s.percentiles {
        let word = if p.fract() == 0.0 { format!("{}", *p as i64) } else { format!("{p}") };
        m.insert(format!("p{word}_{key}_ms"), json!(v));
    }
}

/// vLLM's `rps_change_events`: the start rate at the start, then each whole rate the ramp
/// passes, stamped when the request that first asks for it is due (from the schedule).
fn rps_change_events(r: &BenchReport, ramp: &bench_types::RampUp) -> Value {
    let n = r.requests.len();
    let stamp = |offset_s: f64| {
        let t = r.started_at + chrono::Duration::microseconds((offset_s * 1e6) as i64);
        json!(t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
    };
    let offsets = crate::schedule::ramp_offsets(n, ramp, r.spec.load.burstiness, r.spec.seed);
    let mut last = ramp.start_rps;
    let mut events = vec![json!({"rps": last, "timestamp": stamp(0.0)})];
    for (rate, off) in crate::schedule::ramp_rates(n, ramp).into_iter().zip(offsets) {
        let whole = rate as u32;
        for rps in last + 1..=whole {
            events.push(json!({"rps": rps, "timestamp": stamp(off)}));
        }
        last = last.max(whole);
    }
    Value::Array(events)
}

/// The JSON object vLLM writes for one run. `metrics`: which of ttft/tpot/itl/e2el to
/// include (vLLM writes only the selected ones).
pub fn vllm_result_json(r: &BenchReport, tokenizer_id: &str, metrics: &[MetricKind]) -> Value {
    let s = &r.summary;
    let spec = &r.spec;
    let mut m = Map::new();
    m.insert("date".into(), json!(r.started_at.format("%Y%m%d-%H%M%S").to_string()));
    m.insert("endpoint_type".into(), json!(spec.backend.as_str()));
    m.insert("backend".into(), json!(spec.backend.as_str()));
    m.insert("label".into(), if spec.label.is_empty() { Value::Null } else { json!(spec.label) });
    m.insert("model_id".into(), json!(spec.model));
    m.insert("tokenizer_id".into(), json!(tokenizer_id));
    m.insert("num_prompts".into(), json!(spec.num_prompts));
    m.insert("request_rate".into(), spec.load.request_rate.map_or(json!("inf"), |x| json!(x)));
    m.insert("burstiness".into(), json!(spec.load.burstiness));
    m.insert("max_concurrency".into(), json!(s.max_concurrency));
    if let Some(ramp) = &spec.ramp_up {
        m.insert("ramp_up_strategy".into(), json!(ramp.strategy.as_str()));
        m.insert("ramp_up_start_rps".into(), json!(ramp.start_rps));
        m.insert("ramp_up_end_rps".into(), json!(ramp.end_rps));
        m.insert("rps_change_events".into(), rps_change_events(r, ramp));
    }
    m.insert("duration".into(), json!(s.duration_s));
    m.insert("completed".into(), json!(s.completed));
    m.insert("failed".into(), json!(s.failed));
    m.insert("total_input_tokens".into(), json!(s.total_input_tokens));
    m.insert("total_output_tokens".into(), json!(s.total_output_tokens));
    m.insert("request_throughput".into(), json!(s.request_throughput));
    m.insert("request_goodput".into(), json!(s.goodput));
    m.insert("output_throughput".into(), json!(s.output_throughput));
    m.insert("total_token_throughput".into(), json!(s.total_token_throughput));
    m.insert("max_output_tokens_per_s".into(), json!(s.peak_output_throughput));
    m.insert("max_concurrent_requests".into(), json!(s.peak_concurrent_requests));
    let reqs = &r.requests;
    m.insert("input_lens".into(), json!(reqs.iter().map(|q| q.input_tokens).collect::<Vec<_>>()));
    m.insert("output_lens".into(), json!(reqs.iter().map(|q| q.output_tokens).collect::<Vec<_>>()));
    m.insert("ttfts".into(), json!(reqs.iter().map(|q| q.ttft_s.unwrap_or(0.0)).collect::<Vec<_>>()));
    let itls: Vec<Vec<f64>> =
        reqs.iter().map(|q| q.chunk_offsets_s.windows(2).map(|w| w[1] - w[0]).collect()).collect();
    m.insert("itls".into(), json!(itls));
    m.insert(
        "errors".into(),
        json!(reqs.iter().map(|q| q.error.clone().unwrap_or_default()).collect::<Vec<_>>()),
    );
    for kind in [MetricKind::Ttft, MetricKind::Tpot, MetricKind::Itl, MetricKind::E2el] {
        if let (true, Some(stats)) = (metrics.contains(&kind), kind.stats(s)) {
            put_stats(&mut m, kind.info().key, stats);
        }
    }
    if let Some(t) = &s.token_itl {
        put_stats(&mut m, "latlab_token_itl", t);
    }
    m.insert("latlab_total_input_tokens_source".into(), json!("dataset prompt lengths (vLLM v0.11)"));
    m.insert("latlab_server_input_tokens".into(), json!(s.server_input_tokens));
    if let Some(src) = s.token_itl_source {
        m.insert("latlab_token_itl_source".into(), json!(src));
    }
    m.insert("latlab_peak_concurrency_method".into(), json!("exact interval sweep"));
    m.insert("latlab_notes".into(), json!(r.notes));
    Value::Object(m)
}
