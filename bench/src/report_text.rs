//! vLLM's "Serving Benchmark Result" block, line for line (`"{:<40} {:<10}"` rows,
//! 50-wide centred headers), so results paste beside published ones. latlab adds a
//! "Failed requests" row when any failed and a token-level ITL section when known.

use bench_types::{Stats, Summary};
use std::fmt::Write;

/// vLLM's default `--percentile-metrics`.
pub const DEFAULT_METRICS: [&str; 3] = ["ttft", "tpot", "itl"];

fn centred(title: &str, fill: char) -> String {
    let width = 50usize;
    let len = title.chars().count();
    if len >= width {
        return title.to_string();
    }
    let left = (width - len) / 2;
    let right = width - len - left;
    format!("{}{}{}", fill.to_string().repeat(left), title, fill.to_string().repeat(right))
}

fn row(out: &mut String, label: &str, value: impl std::fmt::Display) {
    let _ = writeln!(out, "{label:<40} {:<10}", value.to_string());
}

fn row_f(out: &mut String, label: &str, value: f64) {
    row(out, label, format!("{value:.2}"));
}

/// Python's `str(int(p)) if int(p) == p else str(p)`.
fn p_word(p: f64) -> String {
    if p.fract() == 0.0 { format!("{}", p as i64) } else { format!("{p}") }
}

fn metric_block(out: &mut String, short: &str, title: &str, s: &Stats) {
    let _ = writeln!(out, "{}", centred(title, '-'));
    row_f(out, &format!("Mean {short} (ms):"), s.mean_ms);
    row_f(out, &format!("Median {short} (ms):"), s.median_ms);
    for (p, v) in &s.percentiles {
        row_f(out, &format!("P{} {short} (ms):", p_word(*p)), *v);
    }
}

/// The text block for one run. `metrics`: which of ttft/tpot/itl/e2el to show.
pub fn render_text(s: &Summary, metrics: &[&str]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", centred(" Serving Benchmark Result ", '='));
    row(&mut out, "Successful requests:", s.completed);
    if s.failed > 0 {
        row(&mut out, "Failed requests:", s.failed);
    }
    if let Some(c) = s.max_concurrency {
        row(&mut out, "Maximum request concurrency:", c);
    }
    if let Some(r) = s.request_rate {
        row_f(&mut out, "Request rate configured (RPS):", r);
    }
    row_f(&mut out, "Benchmark duration (s):", s.duration_s);
    row(&mut out, "Total input tokens:", s.total_input_tokens);
    row(&mut out, "Total generated tokens:", s.total_output_tokens);
    row_f(&mut out, "Request throughput (req/s):", s.request_throughput);
    if let Some(g) = s.goodput {
        row_f(&mut out, "Request goodput (req/s):", g);
    }
    row_f(&mut out, "Output token throughput (tok/s):", s.output_throughput);
    row_f(&mut out, "Peak output token throughput (tok/s):", s.peak_output_throughput);
    row_f(&mut out, "Peak concurrent requests:", f64::from(s.peak_concurrent_requests));
    row_f(&mut out, "Total Token throughput (tok/s):", s.total_token_throughput);
    let has = |m: &str| metrics.contains(&m);
    if has("ttft") {
        metric_block(&mut out, "TTFT", "Time to First Token", &s.ttft);
    }
    if has("tpot") {
        metric_block(&mut out, "TPOT", "Time per Output Token (excl. 1st token)", &s.tpot);
    }
    if has("itl") {
        metric_block(&mut out, "ITL", "Inter-token Latency", &s.itl);
        if let Some(t) = &s.token_itl {
            metric_block(&mut out, "token ITL", "Token-level ITL (latlab)", t);
        }
    }
    if has("e2el") {
        metric_block(&mut out, "E2EL", "End-to-end Latency", &s.e2el);
    }
    let _ = writeln!(out, "{}", "=".repeat(50));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_vllm_lines() {
        let s = Summary {
            completed: 100,
            max_concurrency: Some(4),
            duration_s: 44.4,
            total_input_tokens: 23260,
            total_output_tokens: 22061,
            request_throughput: 2.2522,
            output_throughput: 496.88,
            peak_output_throughput: 540.0,
            peak_concurrent_requests: 4,
            total_token_throughput: 1020.76,
            ttft: Stats { mean_ms: 64.0, median_ms: 60.26, std_ms: 1.0, percentiles: vec![(99.0, 98.59)] },
            ..Default::default()
        };
        let text = render_text(&s, &DEFAULT_METRICS);
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        assert_eq!(lines[0], "============ Serving Benchmark Result ============");
        assert_eq!(lines[1], "Successful requests:                     100");
        assert_eq!(lines[2], "Maximum request concurrency:             4");
        assert_eq!(lines[3], "Benchmark duration (s):                  44.40");
        assert_eq!(lines[10], "Total Token throughput (tok/s):          1020.76");
        assert_eq!(lines[9], "Peak concurrent requests:                4.00");
        assert_eq!(lines[11], "---------------Time to First Token----------------");
        assert_eq!(lines[14], "P99 TTFT (ms):                           98.59");
        assert_eq!(lines[15], "-----Time per Output Token (excl. 1st token)------");
        assert_eq!(*lines.last().unwrap(), "=".repeat(50));
        assert_eq!(p_word(99.9), "99.9");
    }
}
