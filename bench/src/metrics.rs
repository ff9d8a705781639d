//! The summary of a run as ONE pure function over per-request records, with vLLM's
//! definitions (`calculate_metrics` in `vllm/benchmarks/serve.py`):
//! - only successful requests count toward tokens, TTFT, TPOT, ITL and E2EL;
//! - TPOT = (E2EL - TTFT) / (output_tokens - 1) for requests with > 1 output token;
//! - ITL pools the chunk gaps of all requests;
//! - throughputs divide by the measured duration (first dispatch to last completion);
//! - goodput counts requests meeting every SLO (TPOT taken as 0 for 1-token outputs);
//! - peak output throughput: max over 1-second buckets (from the first successful start)
//!   of chunk events, as vLLM counts it;
//! - peak concurrency: exact sweep over [start, end) intervals (vLLM v0.11's per-second
//!   buckets over-count).
//!
//! latlab adds token-level ITL when chunk token counts are known.

use crate::stats::stats_ms;
use bench_types::{Goodput, RequestRecord, Summary};

/// Settings that shape the summary but are not measurements.
#[derive(Debug, Clone, Default)]
pub struct SummaryOptions {
    pub percentiles: Vec<f64>,
    pub goodput: Goodput,
    pub max_concurrency: Option<u32>,
    pub request_rate: Option<f64>,
}

impl SummaryOptions {
    pub fn from_spec(spec: &bench_types::RunSpec) -> Self {
        SummaryOptions {
            percentiles: spec.percentiles.clone(),
            goodput: spec.goodput.clone(),
            max_concurrency: spec.load.max_concurrency.first().copied(),
            // A ramp-up has no one configured rate: vLLM reports it as inf.
            request_rate: if spec.ramp_up.is_some() { None } else { spec.load.request_rate },
        }
    }
}

pub fn compute_summary(records: &[RequestRecord], duration_s: f64, opts: &SummaryOptions) -> Summary {
    let ok: Vec<&RequestRecord> =
        records.iter().filter(|r| r.success && r.ttft_s.is_some() && r.e2el_s.is_some()).collect();
    let (mut ttfts, mut e2els, mut tpots, mut all_tpots, mut itls) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut total_in, mut total_out) = (0u64, 0u64);
    for r in &ok {
        let (ttft, e2el) = (r.ttft_s.unwrap_or(0.0), r.e2el_s.unwrap_or(0.0));
        total_in += u64::from(r.input_tokens);
        total_out += u64::from(r.output_tokens);
        let tpot = if r.output_tokens > 1 {
            let t = (e2el - ttft) / f64::from(r.output_tokens - 1);
            tpots.push(t);
            t
        } else {
            0.0
        };
        all_tpots.push(tpot);
        itls.extend(r.chunk_offsets_s.windows(2).map(|w| w[1] - w[0]));
        ttfts.push(ttft);
        e2els.push(e2el);
    }
    let completed = ok.len() as u32;
    let dur = if duration_s > 0.0 { duration_s } else { f64::NAN };
    let goodput = (!opts.goodput.is_empty()).then(|| {
        let g = &opts.goodput;
        let good = (0..ok.len())
            .filter(|&i| {
                // vLLM: good when slo >= value for every SLO given (ms -> s).
                g.ttft_ms.is_none_or(|s| s / 1000.0 >= ttfts[i])
                    && g.tpot_ms.is_none_or(|s| s / 1000.0 >= all_tpots[i])
                    && g.e2el_ms.is_none_or(|s| s / 1000.0 >= e2els[i])
            })
            .count();
        good as f64 / dur
    });
    let token_itls = token_level_itls(&ok);
    let p = &opts.percentiles;
    Summary {
        completed,
        failed: (records.len() - ok.len()) as u32,
        max_concurrency: opts.max_concurrency,
        request_rate: opts.request_rate,
        duration_s,
        total_input_tokens: total_in,
        // Filled by the runner, which still has what the records do not keep.
        server_input_tokens: None,
        total_output_tokens: total_out,
        request_throughput: completed as f64 / dur,
        goodput,
        output_throughput: total_out as f64 / dur,
        total_token_throughput: (total_in + total_out) as f64 / dur,
        peak_output_throughput: peak_chunks_per_second(&ok),
        peak_concurrent_requests: exact_peak_concurrency(&ok),
        ttft: stats_ms(&ttfts, p),
        tpot: stats_ms(&tpots, p),
        itl: stats_ms(&itls, p),
        e2el: stats_ms(&e2els, p),
        token_itl: token_itls.map(|v| stats_ms(&v, p)),
        token_itl_source: None,
    }
}

/// vLLM's "peak output token throughput": events per 1-second bucket counted from the
/// earliest successful start. Each `choices` event counts as one token, as in vLLM.
fn peak_chunks_per_second(ok: &[&RequestRecord]) -> f64 {
    let Some(t0) = ok.iter().map(|r| r.dispatch_offset_s).min_by(f64::total_cmp) else { return 0.0 };
    let mut buckets: Vec<u32> = Vec::new();
    for r in ok {
        for &off in &r.chunk_offsets_s {
            let b = (r.dispatch_offset_s + off - t0).max(0.0) as usize;
            if buckets.len() <= b {
                buckets.resize(b + 1, 0);
            }
            buckets[b] += 1;
        }
    }
    buckets.into_iter().max().unwrap_or(0) as f64
}

/// Most requests in flight at once over half-open [start, end) intervals: an end and a
/// start at the same instant do not overlap.
fn exact_peak_concurrency(ok: &[&RequestRecord]) -> u32 {
    let mut events: Vec<(f64, i32)> = Vec::with_capacity(ok.len() * 2);
    for r in ok {
        let start = r.dispatch_offset_s;
        events.push((start, 1));
        events.push((start + r.e2el_s.unwrap_or(0.0), -1));
    }
    // Ends (-1) sort before starts (+1) at equal times.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut cur, mut peak) = (0i32, 0i32);
    for (_, d) in events {
        cur += d;
        peak = peak.max(cur);
    }
    peak as u32
}

/// Token-level ITL: a chunk that carries k tokens after a gap g contributes k intervals of
/// g/k. A chunk with no tokens passes its gap on to the next chunk that has some. The
/// first chunk has no gap before it (its extra tokens arrive with the first token).
/// `None` when no successful request knows its chunk token counts.
fn token_level_itls(ok: &[&RequestRecord]) -> Option<Vec<f64>> {
    let mut out = Vec::new();
    let mut any = false;
    for r in ok {
        let Some(tokens) = &r.chunk_tokens else { continue };
        if tokens.len() != r.chunk_offsets_s.len() {
            continue;
        }
        any = true;
        let mut carried = 0.0;
        for (i, &k) in tokens.iter().enumerate().skip(1) {
            let gap = r.chunk_offsets_s[i] - r.chunk_offsets_s[i - 1] + carried;
            if k == 0 {
                carried = gap;
                continue;
            }
            carried = 0.0;
            out.extend(std::iter::repeat_n(gap / f64::from(k), k as usize));
        }
    }
    any.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(index: u32, start: f64, offsets: &[f64], out_tokens: u32) -> RequestRecord {
        RequestRecord {
            index,
            dispatch_offset_s: start,
            success: true,
            error: None,
            input_tokens: 10,
            output_tokens: out_tokens,
            ttft_s: offsets.first().copied(),
            e2el_s: offsets.last().copied(),
            chunk_offsets_s: offsets.to_vec(),
            chunk_tokens: None,
        }
    }

    fn opts() -> SummaryOptions {
        SummaryOptions { percentiles: vec![50.0, 99.0], ..Default::default() }
    }

    #[test]
    fn hand_computed_two_requests() {
        // A: ttft 0.1, chunks at 0.1,0.2,0.4 (3 tokens) -> tpot (0.4-0.1)/2 = 0.15
        // B: ttft 0.2, chunks at 0.2,0.3 (2 tokens)    -> tpot 0.1
        let a = rec(0, 0.0, &[0.1, 0.2, 0.4], 3);
        let b = rec(1, 0.5, &[0.2, 0.3], 2);
        let mut failed = rec(2, 0.6, &[], 0);
        failed.success = false;
        failed.error = Some("HTTP 500".into());
        let s = compute_summary(&[a, b, failed], 2.0, &opts());
        assert_eq!((s.completed, s.failed), (2, 1));
        assert_eq!((s.total_input_tokens, s.total_output_tokens), (20, 5));
        assert_eq!(s.request_throughput, 1.0);
        assert_eq!(s.output_throughput, 2.5);
        assert_eq!(s.total_token_throughput, 12.5);
        assert!((s.ttft.mean_ms - 150.0).abs() < 1e-9);
        assert!((s.tpot.mean_ms - 125.0).abs() < 1e-9);
        assert!((s.tpot.std_ms - 25.0).abs() < 1e-9);
        // ITL pool: 0.1, 0.2, 0.1 -> mean 133.33, median 100, p99 = 0.1+(0.2-0.1)*... sorted [.1,.1,.2] idx 1.98
        assert!((s.itl.mean_ms - 400.0 / 3.0).abs() < 1e-9);
        assert!((s.itl.median_ms - 100.0).abs() < 1e-9);
        assert!((s.itl.percentile(99.0).unwrap() - 198.0).abs() < 1e-9);
        assert!((s.e2el.median_ms - 350.0).abs() < 1e-9);
        // A runs [0, 0.4), B [0.5, 0.8): never together.
        assert_eq!(s.peak_concurrent_requests, 1);
        // All 5 chunk events fall in the first second.
        assert_eq!(s.peak_output_throughput, 5.0);
        assert!(s.goodput.is_none() && s.token_itl.is_none());
    }

    #[test]
    fn back_to_back_requests_do_not_overlap_and_overlaps_are_exact() {
        let a = rec(0, 0.0, &[0.5, 1.0], 2);
        let b = rec(1, 1.0, &[0.5, 1.0], 2); // starts exactly when A ends
        let c = rec(2, 1.5, &[0.2, 0.3], 2); // inside B
        let s = compute_summary(&[a, b, c], 2.0, &opts());
        assert_eq!(s.peak_concurrent_requests, 2);
    }

    #[test]
    fn goodput_counts_requests_meeting_every_slo() {
        let a = rec(0, 0.0, &[0.1, 0.2, 0.4], 3); // ttft 100ms, tpot 150ms
        let b = rec(1, 0.0, &[0.3, 0.35], 2); // ttft 300ms, tpot 50ms
        let one = rec(2, 0.0, &[0.05], 1); // tpot counted as 0 for goodput
        let mut o = opts();
        o.goodput = Goodput { ttft_ms: Some(200.0), tpot_ms: Some(160.0), e2el_ms: None };
        let s = compute_summary(&[a, b, one], 4.0, &o);
        assert_eq!(s.goodput, Some(0.5)); // a and `one` pass: 2 / 4 s
        assert_eq!(s.tpot.percentiles.len(), 2, "one-token requests have no TPOT");
    }

    #[test]
    fn token_level_itl_splits_multi_token_chunks() {
        // Speculative decoding: 1 token, then chunks of 3 and 2 tokens 30 ms / 20 ms apart,
        // then an empty finish chunk 10 ms later whose gap goes nowhere (no tokens follow).
        let mut r = rec(0, 0.0, &[0.1, 0.13, 0.15, 0.16], 6);
        r.chunk_tokens = Some(vec![1, 3, 2, 0]);
        let s = compute_summary(&[r], 1.0, &opts());
        let t = s.token_itl.unwrap();
        assert!((t.mean_ms - 10.0).abs() < 1e-9, "{t:?}");
        assert!((s.itl.mean_ms - 20.0).abs() < 1e-9, "chunk ITL stays vLLM's: 30,20,10");
        assert!((s.tpot.mean_ms - 12.0).abs() < 1e-9, "(0.16-0.1)/5");
    }

    #[test]
    fn no_success_gives_zeros_not_nan_stats() {
        let mut f = rec(0, 0.0, &[], 0);
        f.success = false;
        let s = compute_summary(&[f], 1.0, &opts());
        assert_eq!((s.completed, s.failed), (0, 1));
        assert_eq!(s.ttft.mean_ms, 0.0);
        assert_eq!(s.peak_concurrent_requests, 0);
    }
}
