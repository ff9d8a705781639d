//! vLLM's "Serving Benchmark Result" text block, byte for byte in layout (labels padded to
//! 40 columns, a space, the value; centred section titles 50 wide), so latlab's output can
//! be pasted beside published results. Pure, so the web UI (wasm) and `latlab-bench` print
//! the same thing.

use crate::metrics::MetricKind;
use crate::report::{Stats, Summary};

fn line(out: &mut String, label: &str, value: impl std::fmt::Display) {
    out.push_str(&format!("{label:<40} {value}\n"));
}

/// Python's `'{s:{c}^{n}}'.format(...)`: centred, the odd pad character on the right.
fn title(out: &mut String, s: &str, fill: char) {
    let pad = 50usize.saturating_sub(s.chars().count());
    let left = pad / 2;
    let f: String = std::iter::repeat_n(fill, left).collect();
    let r: String = std::iter::repeat_n(fill, pad - left).collect();
    out.push_str(&format!("{f}{s}{r}\n"));
}

/// "99" for whole percentiles, "99.9" otherwise (as vLLM labels them).
pub fn percentile_label(p: f64) -> String {
    if p.fract() == 0.0 { format!("{}", p as i64) } else { format!("{p}") }
}

/// `value` with two decimals, or "n/a" where the source lacked it.
fn num(missing: bool, value: f64) -> String {
    if missing { "n/a".to_string() } else { format!("{value:.2}") }
}

fn section(out: &mut String, heading: &str, short: &str, key: &str, s: &Stats, lacks: &dyn Fn(&str) -> bool) {
    title(out, heading, '-');
    let all = lacks(key);
    line(out, &format!("Mean {short} (ms):"), num(all || lacks(&format!("{key}.mean")), s.mean_ms));
    line(out, &format!("Median {short} (ms):"), num(all || lacks(&format!("{key}.median")), s.median_ms));
    for (p, v) in &s.percentiles {
        let label = percentile_label(*p);
        line(out, &format!("P{label} {short} (ms):"), num(all || lacks(&format!("{key}.p{label}")), *v));
    }
}

/// The block for `summary`, with a section per metric in `metrics` (vLLM's default is
/// TTFT, TPOT, ITL). Token-level ITL, latlab's addition, is printed under its own title
/// when asked for and known.
pub fn serving_result(summary: &Summary, metrics: &[MetricKind]) -> String {
    serving_result_marking(summary, metrics, &|_| false)
}

/// `serving_result`, with "n/a" wherever `lacks(key)` says the source had no number
/// (imported results: `ImportedTarget::lacks`, keys such as `e2el`, `ttft.median`,
/// `peak_output_throughput`), never a 0 that was not measured.
pub fn serving_result_marking(
    summary: &Summary,
    metrics: &[MetricKind],
    lacks: &dyn Fn(&str) -> bool,
) -> String {
    let s = summary;
    let mut out = String::new();
    title(&mut out, " Serving Benchmark Result ", '=');
    line(&mut out, "Successful requests:", s.completed);
    if s.failed > 0 {
        line(&mut out, "Failed requests:", s.failed);
    }
    if let Some(c) = s.max_concurrency {
        line(&mut out, "Maximum request concurrency:", c);
    }
    if let Some(r) = s.request_rate {
        line(&mut out, "Request rate configured (RPS):", format!("{r:.2}"));
    }
    line(&mut out, "Benchmark duration (s):", format!("{:.2}", s.duration_s));
    line(&mut out, "Total input tokens:", s.total_input_tokens);
    line(&mut out, "Total generated tokens:", s.total_output_tokens);
    line(&mut out, "Request throughput (req/s):", format!("{:.2}", s.request_throughput));
    if let Some(g) = s.goodput {
        line(&mut out, "Request goodput (req/s):", format!("{g:.2}"));
    }
    line(&mut out, "Output token throughput (tok/s):", format!("{:.2}", s.output_throughput));
    line(
        &mut out,
        "Peak output token throughput (tok/s):",
        num(lacks("peak_output_throughput"), s.peak_output_throughput),
    );
    line(
        &mut out,
        "Peak concurrent requests:",
        num(lacks("peak_concurrent_requests"), s.peak_concurrent_requests as f64),
    );
    line(&mut out, "Total Token throughput (tok/s):", format!("{:.2}", s.total_token_throughput));
    for m in metrics {
        match m {
            MetricKind::Ttft => {
                section(&mut out, "Time to First Token", "TTFT", m.info().key, &s.ttft, lacks)
            }
            MetricKind::Tpot => section(
                &mut out,
                "Time per Output Token (excl. 1st token)",
                "TPOT",
                m.info().key,
                &s.tpot,
                lacks,
            ),
            MetricKind::Itl => section(&mut out, "Inter-token Latency", "ITL", m.info().key, &s.itl, lacks),
            MetricKind::E2el => section(&mut out, "End-to-end Latency", "E2EL", m.info().key, &s.e2el, lacks),
            MetricKind::TokenItl => {
                if let Some(t) = &s.token_itl {
                    section(&mut out, "Token-level Inter-token Latency", "token ITL", m.info().key, t, lacks)
                }
            }
        }
    }
    out.push_str(&"=".repeat(50));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_the_source_lacked_print_as_n_a() {
        let s = Summary { completed: 1, duration_s: 44.4, ..Summary::default() };
        let lacks = |k: &str| matches!(k, "e2el" | "ttft.median" | "peak_output_throughput");
        let out = serving_result_marking(&s, &[MetricKind::Ttft, MetricKind::E2el], &lacks);
        assert!(out.contains("Mean E2EL (ms):                          n/a\n"), "{out}");
        assert!(out.contains("Median TTFT (ms):                        n/a\n"), "{out}");
        assert!(out.contains("Mean TTFT (ms):                          0.00\n"), "{out}");
        assert!(out.contains("Peak output token throughput (tok/s):    n/a\n"), "{out}");
        assert!(out.contains("Benchmark duration (s):                  44.40\n"), "{out}");
    }

    fn stats(mean: f64, median: f64, p99: f64) -> Stats {
        Stats { mean_ms: mean, median_ms: median, std_ms: 0.0, percentiles: vec![(99.0, p99)] }
    }

    /// The seed study's vLLM BS=4 block (shared/seed), reproduced from its numbers.
    #[test]
    fn matches_the_seed_study_block() {
        let s = Summary {
            completed: 100,
            failed: 0,
            max_concurrency: Some(4),
            request_rate: None,
            duration_s: 44.40,
            total_input_tokens: 23260,
            server_input_tokens: None,
            total_output_tokens: 22061,
            request_throughput: 2.25,
            goodput: None,
            output_throughput: 496.88,
            total_token_throughput: 1020.76,
            peak_output_throughput: 540.0,
            peak_concurrent_requests: 13,
            ttft: stats(64.00, 60.26, 98.59),
            tpot: stats(7.38, 7.40, 7.96),
            itl: stats(7.78, 7.37, 40.98),
            e2el: Stats::default(),
            token_itl: None,
            token_itl_source: None,
        };
        let expected = include_str!("../../data/fixtures/vllm_serving_result.txt");
        assert_eq!(serving_result(&s, &[MetricKind::Ttft, MetricKind::Tpot, MetricKind::Itl]), expected);
    }

    #[test]
    fn fractional_percentiles_are_labelled_like_vllm() {
        assert_eq!(percentile_label(99.0), "99");
        assert_eq!(percentile_label(99.9), "99.9");
    }
}
