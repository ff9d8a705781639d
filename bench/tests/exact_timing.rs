//! The client against a server that streams at exact, known times: computed metrics must
//! equal the scripted truth.
//!
//! Tolerances. Each event leaves the server at `t0 + ttft + i*gap` plus a lateness of
//! 0..~1 ms (tokio's timer ticks in whole milliseconds) plus scheduling jitter on a shared
//! 2-core machine; loopback adds ~0.1 ms. Lateness does not accumulate (absolute
//! deadlines), so:
//! - TTFT and E2EL are late by that one-event amount: asserted within [truth, truth+15 ms]
//!   (a few ms on an idle machine; the rest is headroom for a loaded 2-core CI box);
//! - TPOT and mean ITL are differences spread over n-1 gaps, so the error shrinks to
//!   (lateness_last - lateness_first)/(n-1): asserted within 2 % of the truth;
//! - median ITL is one gap: within 2 ms.

mod common;

use bench::{RunOptions, run_benchmark};
use common::{Script, jsonl, spec, start};
use std::time::Duration;

fn within(v: f64, lo: f64, hi: f64, what: &str) {
    assert!(v >= lo && v <= hi, "{what} = {v:.3}, expected in [{lo:.3}, {hi:.3}]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_per_event_gives_the_scripted_metrics() {
    let srv = start(Script::default()).await; // ttft 50 ms, gap 20 ms
    let data =
        jsonl("exact.jsonl", &[("ok first", 30), ("ok second", 30), ("ok third", 30), ("ok fourth", 30)]);
    let mut s = spec(&srv.base_url, data, 4, Some(1));
    s.warmup_requests = 1;
    let r = run_benchmark(&s, &srv.base_url, RunOptions::default()).await.unwrap();
    let m = &r.summary;
    assert_eq!((m.completed, m.failed, r.requests.len()), (4, 0, 4), "warm-up requests are not recorded");
    assert_eq!(m.total_output_tokens, 120);
    within(m.ttft.mean_ms, 50.0, 65.0, "mean TTFT");
    within(m.tpot.mean_ms, 19.6, 20.4, "mean TPOT");
    within(m.itl.mean_ms, 19.6, 20.4, "mean ITL");
    within(m.itl.median_ms, 18.0, 22.0, "median ITL");
    within(m.e2el.mean_ms, 630.0, 645.0, "mean E2EL (50 + 29*20)");
    assert_eq!(m.peak_concurrent_requests, 1, "closed loop at concurrency 1");
    // Each request has exactly 30 chunks and, single-token, a token ITL equal to its ITL.
    assert!(r.requests.iter().all(|q| q.chunk_offsets_s.len() == 30));
    within(m.token_itl.as_ref().unwrap().mean_ms, 19.6, 20.4, "token ITL");
    // Duration covers 4 back-to-back requests; throughput follows from it.
    within(m.duration_s, 4.0 * 0.630, 4.0 * 0.630 + 0.2, "duration");
    assert!((m.output_throughput - 120.0 / m.duration_s).abs() < 1e-9);
    // Records are in dispatch order and start after the previous one ended.
    for w in r.requests.windows(2) {
        assert!(w[1].dispatch_offset_s >= w[0].dispatch_offset_s + w[0].e2el_s.unwrap());
    }
    assert_eq!(r.target_info.models.as_ref().unwrap()["data"][0]["id"], "test-model");
    assert!(r.target_info.engine_info.is_none(), "the test server has no /v1/engine/info");
}

/// Speculative-decoding shape: after the first token every event carries 4 tokens,
/// 40 ms apart. vLLM's chunk ITL is 40 ms; TPOT and token-level ITL are 10 ms.
async fn multi_token_case(per_chunk_usage: bool) {
    let script =
        Script { gap: Duration::from_millis(40), tokens_per_event: 4, per_chunk_usage, ..Script::default() };
    let srv = start(script).await;
    let data = jsonl(&format!("multi-{per_chunk_usage}.jsonl"), &[("ok a", 33), ("ok b", 33)]);
    let r = run_benchmark(&spec(&srv.base_url, data, 2, Some(2)), &srv.base_url, RunOptions::default())
        .await
        .unwrap();
    let m = &r.summary;
    assert_eq!((m.completed, m.total_output_tokens), (2, 66));
    assert!(r.requests.iter().all(|q| q.chunk_offsets_s.len() == 9), "1 + 8 events of 4");
    assert_eq!(r.requests[0].chunk_tokens.as_deref(), Some(&[1, 4, 4, 4, 4, 4, 4, 4, 4][..]));
    within(m.itl.mean_ms, 39.2, 40.8, "chunk ITL");
    within(m.tpot.mean_ms, 9.8, 10.2, "TPOT");
    within(m.token_itl.as_ref().unwrap().mean_ms, 9.8, 10.2, "token ITL");
    within(m.e2el.mean_ms, 50.0 + 8.0 * 40.0, 50.0 + 8.0 * 40.0 + 15.0, "E2EL");
    assert_eq!(m.peak_concurrent_requests, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_tokens_per_event_from_per_chunk_usage() {
    multi_token_case(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_tokens_per_event_from_retokenized_chunks() {
    multi_token_case(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_streams_stay_exact() {
    // 128 requests, at most 64 in flight, each 20 tokens 10 ms apart.
    let srv = start(Script {
        ttft: Duration::from_millis(30),
        gap: Duration::from_millis(10),
        ..Script::default()
    })
    .await;
    let rows: Vec<(String, u32)> = (0..128).map(|i| (format!("ok {i}"), 20)).collect();
    let rows: Vec<(&str, u32)> = rows.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    let data = jsonl("many.jsonl", &rows);
    let r = run_benchmark(&spec(&srv.base_url, data, 128, Some(64)), &srv.base_url, RunOptions::default())
        .await
        .unwrap();
    let m = &r.summary;
    assert_eq!((m.completed, m.failed), (128, 0));
    assert_eq!(m.peak_concurrent_requests, 64, "the limiter caps in-flight requests exactly");
    within(m.tpot.mean_ms, 9.8, 10.2, "mean TPOT under 64 streams");
    within(m.ttft.median_ms, 30.0, 45.0, "median TTFT under 64 streams");
    assert_eq!(m.total_output_tokens, 128 * 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_rate_follows_the_seeded_schedule() {
    let srv =
        start(Script { ttft: Duration::from_millis(5), gap: Duration::from_millis(5), ..Script::default() })
            .await;
    let rows: Vec<(String, u32)> = (0..8).map(|i| (format!("ok {i}"), 3)).collect();
    let rows: Vec<(&str, u32)> = rows.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    let mut s = spec(&srv.base_url, jsonl("rate.jsonl", &rows), 8, None);
    s.load.request_rate = Some(20.0);
    s.seed = 3;
    let r = run_benchmark(&s, &srv.base_url, RunOptions::default()).await.unwrap();
    let want = bench::schedule::arrival_offsets(8, Some(20.0), 1.0, 3);
    assert!((want[7] - 0.4).abs() < 1e-9, "rescaled to n/rate");
    for (q, w) in r.requests.iter().zip(&want) {
        within(q.dispatch_offset_s, *w, w + 0.01, "dispatch offset");
    }
    assert_eq!(r.summary.request_rate, Some(20.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_up_follows_its_schedule_without_rescaling() {
    use bench_types::{RampUp, RampUpStrategy};
    let srv =
        start(Script { ttft: Duration::from_millis(5), gap: Duration::from_millis(5), ..Script::default() })
            .await;
    let rows: Vec<(String, u32)> = (0..8).map(|i| (format!("ok {i}"), 3)).collect();
    let rows: Vec<(&str, u32)> = rows.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    let mut s = spec(&srv.base_url, jsonl("ramp.jsonl", &rows), 8, None);
    let ramp = RampUp { strategy: RampUpStrategy::Linear, start_rps: 10, end_rps: 40 };
    s.ramp_up = Some(ramp.clone());
    s.seed = 3;
    let r = run_benchmark(&s, &srv.base_url, RunOptions::default()).await.unwrap();
    let want = bench::schedule::ramp_offsets(8, &ramp, 1.0, 3);
    assert_ne!(want, bench::schedule::arrival_offsets(8, Some(10.0), 1.0, 3));
    for (q, w) in r.requests.iter().zip(&want) {
        within(q.dispatch_offset_s, *w, w + 0.01, "dispatch offset");
    }
    assert_eq!(r.summary.request_rate, None, "a ramp has no one configured rate (vLLM: inf)");
}
