//! Prometheus metrics written by hand (a few counters and histograms need no framework).
//! Request-side numbers live here; engine gauges are read from the engine's stats.

use engine::engine_loop::EngineStats;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Upper bounds in seconds, spanning CPU (slow) and GPU (ms) serving.
const BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; 14],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, secs: f64) {
        if let Some(i) = BUCKETS.iter().position(|&b| secs <= b) {
            self.counts[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_micros.fetch_add((secs * 1e6) as u64, Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cum = 0;
        for (b, c) in BUCKETS.iter().zip(&self.counts) {
            cum += c.load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {cum}");
        }
        let n = self.count.load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {n}");
        let _ = writeln!(out, "{name}_sum {}", self.sum_micros.load(Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "{name}_count {n}");
    }
}

#[derive(Default)]
pub struct Metrics {
    pub requests_ok: AtomicU64,
    pub requests_error: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    pub ttft: Histogram,
    pub tpot: Histogram,
    pub e2e: Histogram,
}

fn counter(out: &mut String, name: &str, help: &str, labels: &[(&str, u64)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    for (l, v) in labels {
        let _ = writeln!(out, "{name}{l} {v}");
    }
}

fn gauge(out: &mut String, name: &str, help: &str, v: u64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
}

impl Metrics {
    pub fn render(&self, e: &EngineStats) -> String {
        let mut o = String::new();
        let ok = self.requests_ok.load(Relaxed);
        let err = self.requests_error.load(Relaxed);
        counter(
            &mut o,
            "latlab_requests_total",
            "Generation requests by outcome.",
            &[("{status=\"ok\"}", ok), ("{status=\"error\"}", err)],
        );
        counter(
            &mut o,
            "latlab_prompt_tokens_total",
            "Prompt tokens of finished requests.",
            &[("", self.prompt_tokens.load(Relaxed))],
        );
        counter(
            &mut o,
            "latlab_generation_tokens_total",
            "Completion tokens of finished requests.",
            &[("", self.completion_tokens.load(Relaxed))],
        );
        counter(
            &mut o,
            "latlab_engine_steps_total",
            "Engine steps (forward passes).",
            &[("", e.steps.load(Relaxed))],
        );
        counter(
            &mut o,
            "latlab_engine_preemptions_total",
            "Sequences preempted for KV pages.",
            &[("", e.preemptions.load(Relaxed))],
        );
        counter(
            &mut o,
            "latlab_engine_cancelled_total",
            "Requests cancelled by client disconnect.",
            &[("", e.cancelled.load(Relaxed))],
        );
        self.ttft.render(
            &mut o,
            "latlab_time_to_first_token_seconds",
            "Time from request arrival to the first token.",
        );
        self.tpot.render(
            &mut o,
            "latlab_time_per_output_token_seconds",
            "(E2E - TTFT) / (tokens - 1) per request.",
        );
        self.e2e.render(&mut o, "latlab_e2e_request_latency_seconds", "Request arrival to last token.");
        gauge(
            &mut o,
            "latlab_running_batch_size",
            "Sequences in the running batch.",
            e.running.load(Relaxed),
        );
        gauge(&mut o, "latlab_waiting_requests", "Sequences waiting for admission.", e.waiting.load(Relaxed));
        gauge(&mut o, "latlab_kv_pages_used", "KV cache pages in use.", e.kv_pages_used.load(Relaxed));
        gauge(&mut o, "latlab_kv_pages_total", "KV cache pages in the plan.", e.kv_pages_total.load(Relaxed));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::default();
        for s in [0.0005, 0.003, 0.003, 100.0] {
            h.observe(s);
        }
        let mut out = String::new();
        h.render(&mut out, "x", "help");
        assert!(out.contains("x_bucket{le=\"0.001\"} 1\n"));
        assert!(out.contains("x_bucket{le=\"0.005\"} 3\n"));
        assert!(out.contains("x_bucket{le=\"30\"} 3\n"));
        assert!(out.contains("x_bucket{le=\"+Inf\"} 4\n"));
        assert!(out.contains("x_count 4\n"));
    }
}
