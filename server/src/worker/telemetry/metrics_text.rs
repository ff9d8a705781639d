//! A target's Prometheus `/metrics` body as latlab's normalised series.
//!
//! Which metric feeds which series, by engine:
//!
//! | series | vLLM | SGLang | latlab-engine |
//! |---|---|---|---|
//! | running requests | `vllm:num_requests_running` | `sglang:num_running_reqs` | `latlab_running_batch_size` |
//! | waiting requests | `vllm:num_requests_waiting` | `sglang:num_queue_reqs` | `latlab_waiting_requests` |
//! | KV cache usage | `vllm:kv_cache_usage_perc` (V1), `vllm:gpu_cache_usage_perc` (V0), both 0-1 | `sglang:token_usage` (0-1) | `latlab_kv_pages_used` / `latlab_kv_pages_total` |
//! | accepted length | 1 + Δ`vllm:spec_decode_num_accepted_tokens` / Δ`vllm:spec_decode_num_drafts` | `sglang:spec_accept_length` (a gauge) | Δ`latlab_spec_emitted_tokens_total` / Δ`latlab_spec_verify_steps_total` |
//! | generation tokens/s | Δ`vllm:generation_tokens` / Δt | Δ`sglang:generation_tokens` / Δt | Δ`latlab_generation_tokens` / Δt |
//!
//! Sources: vLLM's metrics design document (docs/design/metrics.md, V0 and V1 lists) and
//! its V1 Prometheus logger (vllm/v1/metrics/loggers.py: the spec-decode counters, exposed
//! with `_total`); SGLang's python/sglang/srt/metrics/collector.py and
//! docs/references/production_metrics.md; latlab-engine's engine-server/src/metrics.rs
//! and engine/src/spec. A counter's `_total` suffix is dropped before matching, so both
//! spellings match (an untyped sample keeps its name as written). Label sets (vLLM's `engine`, SGLang's `tp_rank`, a model name) are
//! summed for counts and averaged for fractions and lengths.

use crate::worker::prometheus_text::Kind;
use bench_types::telemetry::Series;
use std::collections::HashMap;

/// Every sample's value by metric name, one entry per label set.
pub type Values = HashMap<String, Vec<f64>>;

/// Parses a `/metrics` body (prometheus_text.rs); histograms and summaries are left out
/// (no series uses them).
pub fn parse(text: &str) -> Result<Values, String> {
    let mut out = Values::new();
    for sample in crate::worker::prometheus_text::samples(text)? {
        // Only a counter loses `_total`: a gauge may end in it (latlab_kv_pages_total).
        let name = match sample.kind {
            Kind::Counter => sample.name.strip_suffix("_total").unwrap_or(&sample.name),
            Kind::Gauge | Kind::Untyped => &sample.name,
        };
        if sample.value.is_finite() {
            out.entry(name.to_string()).or_default().push(sample.value);
        }
    }
    Ok(out)
}

fn sum(v: &Values, name: &str) -> Option<f64> {
    v.get(name).filter(|xs| !xs.is_empty()).map(|xs| xs.iter().sum())
}

fn mean(v: &Values, name: &str) -> Option<f64> {
    sum(v, name).map(|s| s / v[name].len() as f64)
}

/// A counter by its name without `_total`, typed (suffix dropped by `parse`) or not.
fn counter(v: &Values, name: &str) -> Option<f64> {
    sum(v, name).or_else(|| sum(v, &format!("{name}_total")))
}

fn first(v: &Values, f: fn(&Values, &str) -> Option<f64>, names: &[&str]) -> Option<f64> {
    names.iter().find_map(|n| f(v, n))
}

/// Cumulative counters whose growth between two scrapes makes a series.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Counters {
    generation_tokens: Option<f64>,
    /// (numerator, denominator, added): accepted length = added + Δnum / Δden.
    spec: Option<(f64, f64, f64)>,
}

fn counters(v: &Values) -> Counters {
    let vllm =
        counter(v, "vllm:spec_decode_num_accepted_tokens").zip(counter(v, "vllm:spec_decode_num_drafts"));
    let latlab = counter(v, "latlab_spec_emitted_tokens").zip(counter(v, "latlab_spec_verify_steps"));
    Counters {
        generation_tokens: first(
            v,
            counter,
            &["vllm:generation_tokens", "sglang:generation_tokens", "latlab_generation_tokens"],
        ),
        // vLLM counts accepted draft tokens: each draft also emits one token of its own.
        spec: vllm.map(|(a, d)| (a, d, 1.0)).or(latlab.map(|(e, s)| (e, s, 0.0))),
    }
}

/// Turns successive scrapes into samples: gauges as they are, counters as their growth
/// over the interval since the previous scrape (nothing for the first, or after a reset).
#[derive(Debug, Default)]
pub struct Normaliser {
    previous: Option<(f64, Counters)>,
}

impl Normaliser {
    /// The samples of one scrape taken at `t_s` (seconds on any steady clock).
    pub fn sample(&mut self, v: &Values, t_s: f64) -> Vec<(Series, f64)> {
        let mut out = Vec::new();
        let mut put = |s: Series, x: Option<f64>| {
            if let Some(x) = x.filter(|x| x.is_finite()) {
                out.push((s, x));
            }
        };
        put(
            Series::RunningRequests,
            first(
                v,
                sum,
                &["vllm:num_requests_running", "sglang:num_running_reqs", "latlab_running_batch_size"],
            ),
        );
        put(
            Series::WaitingRequests,
            first(v, sum, &["vllm:num_requests_waiting", "sglang:num_queue_reqs", "latlab_waiting_requests"]),
        );
        let pages =
            sum(v, "latlab_kv_pages_used").zip(sum(v, "latlab_kv_pages_total")).filter(|(_, t)| *t > 0.0);
        put(
            Series::KvCacheUsagePct,
            first(v, mean, &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"])
                .or(pages.map(|(u, t)| u / t))
                .map(|f| 100.0 * f),
        );
        // SGLang reports 0 until it has verified a speculative step.
        put(Series::SpecAcceptLength, mean(v, "sglang:spec_accept_length").filter(|l| *l > 0.0));

        let now = counters(v);
        if let Some((t0, before)) = self.previous {
            let grew = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| b - a).filter(|d| *d >= 0.0);
            let dt = t_s - t0;
            if dt > 0.0 {
                put(
                    Series::GenerationTokensPerS,
                    grew(before.generation_tokens, now.generation_tokens).map(|d| d / dt),
                );
            }
            if let (Some((n0, d0, _)), Some((n1, d1, added))) = (before.spec, now.spec) {
                let (dn, dd) = (n1 - n0, d1 - d0);
                if dn >= 0.0 && dd > 0.0 {
                    put(Series::SpecAcceptLength, Some(added + dn / dd));
                }
            }
        }
        self.previous = Some((t_s, now));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shaped as vLLM V1 writes it (prometheus_client: `_total` on counters, `_created`
    /// beside them, an `engine` label, histograms).
    fn vllm(running: u32, waiting: u32, generated: u64, drafts: u64, accepted: u64) -> String {
        format!(
            r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="Qwen/Qwen3-8B"}} {running}.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{engine="0",model_name="Qwen/Qwen3-8B"}} {waiting}.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="Qwen/Qwen3-8B"}} 0.25
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{engine="0",model_name="Qwen/Qwen3-8B"}} {generated}.0
# HELP vllm:generation_tokens_created Number of generation tokens processed.
# TYPE vllm:generation_tokens_created gauge
vllm:generation_tokens_created{{engine="0",model_name="Qwen/Qwen3-8B"}} 1.7646e+09
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{{engine="0",model_name="Qwen/Qwen3-8B"}} {drafts}.0
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="Qwen/Qwen3-8B"}} {accepted}.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.001",model_name="Qwen/Qwen3-8B"}} 0.0
vllm:time_to_first_token_seconds_bucket{{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"}} 12.0
vllm:time_to_first_token_seconds_count{{engine="0",model_name="Qwen/Qwen3-8B"}} 12.0
vllm:time_to_first_token_seconds_sum{{engine="0",model_name="Qwen/Qwen3-8B"}} 3.5
"#
        )
    }

    const SGLANG: &str = r#"# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 8.0
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="1"} 8.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 3.0
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="1"} 1.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 0.5
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="1"} 0.3
# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 2.75
sglang:spec_accept_length{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="1"} 2.75
# HELP sglang:gen_throughput The generation throughput (token/s).
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 412.3
"#;

    fn latlab(running: u32, used: u32, generated: u64, steps: u64, emitted: u64) -> String {
        format!(
            "# HELP latlab_generation_tokens_total Completion tokens of finished requests.\n\
             # TYPE latlab_generation_tokens_total counter\nlatlab_generation_tokens_total {generated}\n\
             # HELP latlab_running_batch_size Sequences in the running batch.\n\
             # TYPE latlab_running_batch_size gauge\nlatlab_running_batch_size {running}\n\
             # TYPE latlab_waiting_requests gauge\nlatlab_waiting_requests 0\n\
             # TYPE latlab_kv_pages_used gauge\nlatlab_kv_pages_used {used}\n\
             # TYPE latlab_kv_pages_total gauge\nlatlab_kv_pages_total 512\n\
             # TYPE latlab_spec_verify_steps_total counter\nlatlab_spec_verify_steps_total {steps}\n\
             # TYPE latlab_spec_emitted_tokens_total counter\nlatlab_spec_emitted_tokens_total {emitted}\n\
             # TYPE latlab_time_to_first_token_seconds histogram\n\
             latlab_time_to_first_token_seconds_bucket{{le=\"+Inf\"}} 3\n\
             latlab_time_to_first_token_seconds_sum 0.3\nlatlab_time_to_first_token_seconds_count 3\n"
        )
    }

    fn get(samples: &[(Series, f64)], s: Series) -> Option<f64> {
        samples.iter().find(|(k, _)| *k == s).map(|(_, v)| *v)
    }

    #[test]
    fn vllm_gauges_now_and_counters_as_rates_from_the_second_scrape() {
        let mut n = Normaliser::default();
        let first = n.sample(&parse(&vllm(4, 2, 1000, 100, 150)).unwrap(), 10.0);
        assert_eq!(get(&first, Series::RunningRequests), Some(4.0));
        assert_eq!(get(&first, Series::WaitingRequests), Some(2.0));
        assert_eq!(get(&first, Series::KvCacheUsagePct), Some(25.0));
        assert_eq!(get(&first, Series::GenerationTokensPerS), None, "a rate needs two scrapes");
        assert_eq!(get(&first, Series::SpecAcceptLength), None);
        let second = n.sample(&parse(&vllm(5, 0, 1600, 300, 550)).unwrap(), 12.0);
        assert_eq!(get(&second, Series::GenerationTokensPerS), Some(300.0), "(1600 - 1000) / 2 s");
        assert_eq!(get(&second, Series::SpecAcceptLength), Some(3.0), "1 + (550 - 150) / (300 - 100)");
        // A restarted engine's counters go down: that interval has no rate, never a negative one.
        let third = n.sample(&parse(&vllm(0, 0, 10, 1, 1)).unwrap(), 13.0);
        assert_eq!(get(&third, Series::GenerationTokensPerS), None);
        assert_eq!(get(&third, Series::SpecAcceptLength), None);
    }

    #[test]
    fn vllm_v0_cache_usage_counts_too() {
        let text =
            "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n";
        let s = Normaliser::default().sample(&parse(text).unwrap(), 0.0);
        assert_eq!(get(&s, Series::KvCacheUsagePct), Some(50.0));
    }

    #[test]
    fn sglang_ranks_are_summed_for_counts_and_averaged_for_fractions() {
        let s = Normaliser::default().sample(&parse(SGLANG).unwrap(), 0.0);
        assert_eq!(get(&s, Series::RunningRequests), Some(16.0));
        assert_eq!(get(&s, Series::WaitingRequests), Some(4.0));
        assert_eq!(get(&s, Series::KvCacheUsagePct), Some(40.0));
        assert_eq!(get(&s, Series::SpecAcceptLength), Some(2.75));
    }

    #[test]
    fn latlab_engine_pages_and_speculation_counters() {
        let mut n = Normaliser::default();
        let a = n.sample(&parse(&latlab(3, 128, 0, 10, 20)).unwrap(), 0.0);
        assert_eq!(get(&a, Series::RunningRequests), Some(3.0));
        assert_eq!(get(&a, Series::WaitingRequests), Some(0.0));
        assert_eq!(get(&a, Series::KvCacheUsagePct), Some(25.0), "128 of 512 pages");
        let b = n.sample(&parse(&latlab(3, 256, 80, 30, 70)).unwrap(), 0.5);
        assert_eq!(get(&b, Series::SpecAcceptLength), Some(2.5), "(70 - 20) / (30 - 10), the bonus counted");
        assert_eq!(get(&b, Series::GenerationTokensPerS), Some(160.0));
    }

    #[test]
    fn other_bodies_give_errors_or_nothing_known() {
        assert!(parse("<html><body>502 Bad Gateway</body></html>").is_err());
        let unknown =
            parse("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.5\n").unwrap();
        assert!(Normaliser::default().sample(&unknown, 0.0).is_empty());
        // Counters written without a TYPE line still count.
        let mut n = Normaliser::default();
        n.sample(&parse("vllm:generation_tokens_total 10\n").unwrap(), 0.0);
        let s = n.sample(&parse("vllm:generation_tokens_total 30\n").unwrap(), 1.0);
        assert_eq!(get(&s, Series::GenerationTokensPerS), Some(20.0));
    }
}
