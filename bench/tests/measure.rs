//! Measurements, not tests: they print numbers for the report and assert only that the
//! runs succeeded (no timed assertions). Run with
//! `cargo test -p bench --test measure -- --ignored --nocapture --test-threads 1`.
//!
//! The server runs on its own OS thread (single-threaded runtime) and logs the instant it
//! hands each event to hyper; the client runs on a single-threaded runtime on the test
//! thread, i.e. one core. Same process, same monotonic clock, so delays are comparable.

mod common;

use bench::dataset::{Sample, SampleRequest};
use bench::tokenizer::TokenCounter;
use bench::{Prepared, RunOptions, run_prepared};
use common::{Script, SendLog, spec, start_on_own_thread, tokenizer_path};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// CPU seconds (user + system) used so far by the calling thread, from /proc.
fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are 11 and 12 after the ')'.
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    bench::stats::np_percentile_sorted(&v, p)
}

#[test]
#[ignore = "measurement"]
fn measure_client_delay_per_chunk() {
    let log: SendLog = Default::default();
    let url = start_on_own_thread(Script {
        ttft: Duration::from_millis(5),
        gap: Duration::from_millis(2),
        send_log: Some(log.clone()),
        ..Script::default()
    });
    let client = reqwest::Client::builder().tcp_nodelay(true).build().unwrap();
    let body = serde_json::to_vec(&serde_json::json!({
        "model": "m", "messages": [{"role": "user", "content": "ok delay"}], "max_completion_tokens": 2000, "stream": true
    }))
    .unwrap();
    let out = rt().block_on(bench::client::stream_request(
        &client,
        &format!("{url}/v1/chat/completions"),
        None,
        body,
        Duration::from_secs(60),
    ));
    assert!(out.success, "{:?}", out.error);
    let sends = log.lock().unwrap().remove("ok delay").unwrap();
    assert_eq!(sends.len(), out.chunk_offsets_s.len());
    let delays_us: Vec<f64> = sends
        .iter()
        .zip(&out.chunk_offsets_s)
        .map(|(s, off)| {
            ((out.start + Duration::from_secs_f64(*off)).saturating_duration_since(*s)).as_secs_f64() * 1e6
        })
        .collect();
    let mean = delays_us.iter().sum::<f64>() / delays_us.len() as f64;
    println!(
        "MEASURE delay server-send -> client-stamp over {} chunks: mean {:.1} us, median {:.1} us, p99 {:.1} us, max {:.1} us",
        delays_us.len(),
        mean,
        pct(delays_us.clone(), 50.0),
        pct(delays_us.clone(), 99.0),
        pct(delays_us, 100.0)
    );
}

fn run_streams(tok: &Arc<TokenCounter>, n: u32, tokens: u32, gap_ms: u64) {
    let log: SendLog = Default::default();
    let url = start_on_own_thread(Script {
        ttft: Duration::from_millis(50),
        gap: Duration::from_millis(gap_ms),
        send_log: Some(log.clone()),
        ..Script::default()
    });
    let requests = (0..n)
        .map(|i| SampleRequest { prompt: format!("ok {i}"), input_tokens: 2, output_len: tokens })
        .collect();
    let prepared = Prepared { tokenizer: Arc::clone(tok), sample: Sample { requests, notes: vec![] } };
    let s = spec(&url, "unused.jsonl".into(), n, Some(n));
    let rt = rt();
    let cpu0 = thread_cpu_s();
    let t0 = Instant::now();
    let r = rt.block_on(run_prepared(&s, &prepared, &url, RunOptions::default())).unwrap();
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), thread_cpu_s() - cpu0);
    let m = &r.summary;
    assert_eq!(m.completed, n, "{:?}", r.notes);
    // Client-attributable error: each client ITL minus the server's actual send gap.
    let log = log.lock().unwrap();
    let mut err_us = Vec::new();
    let mut server_gaps = Vec::new();
    for q in &r.requests {
        let sends = &log[&format!("ok {}", q.index)];
        for i in 1..sends.len() {
            let server_gap = (sends[i] - sends[i - 1]).as_secs_f64();
            server_gaps.push(server_gap);
            err_us.push(((q.chunk_offsets_s[i] - q.chunk_offsets_s[i - 1]) - server_gap) * 1e6);
        }
    }
    let chunks = r.requests.iter().map(|q| q.chunk_offsets_s.len()).sum::<usize>();
    let server_mean_gap_ms = server_gaps.iter().sum::<f64>() / server_gaps.len() as f64 * 1e3;
    let abs_err: Vec<f64> = err_us.iter().map(|e| e.abs()).collect();
    println!(
        "MEASURE streams={n:5} chunks={chunks:7} client CPU {:.2}s / {wall:.2}s wall = {:.1} us/chunk | TPOT mean {:.3} ms ({:+.2}% vs {gap_ms} ms) | ITL mean {:.3} ({:+.2}% vs server's actual {:.3}) median {:.3} p99 {:.3} | per-gap |client-server| median {:.0} us p99 {:.0} us | TTFT median {:.1} ms",
        cpu,
        cpu / chunks as f64 * 1e6,
        m.tpot.mean_ms,
        (m.tpot.mean_ms / gap_ms as f64 - 1.0) * 100.0,
        m.itl.mean_ms,
        (m.itl.mean_ms / server_mean_gap_ms - 1.0) * 100.0,
        server_mean_gap_ms,
        m.itl.median_ms,
        m.itl.percentile(99.0).unwrap(),
        pct(abs_err.clone(), 50.0),
        pct(abs_err, 99.0),
        m.ttft.median_ms,
    );
}

#[test]
#[ignore = "measurement"]
fn measure_streams_one_core_sustains() {
    let tok = Arc::new(TokenCounter::load(std::path::Path::new(&tokenizer_path())).unwrap());
    let sizes: Vec<u32> = std::env::var("MEASURE_STREAMS")
        .map(|v| v.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or_else(|_| vec![1, 64, 256, 512, 1024, 2048]);
    for n in sizes {
        run_streams(&tok, n, 100, 20);
    }
}
