//! The text report. The block itself is `bench_types::result_block::serving_result` (shared
//! with the web UI, checked against the seed study's vLLM block); this module only turns
//! vLLM's `--percentile-metrics` names into the metrics to print.

use bench_types::result_block::serving_result;
use bench_types::{MetricKind, Summary};

/// vLLM's default `--percentile-metrics`.
pub const DEFAULT_METRICS: &str = "ttft,tpot,itl";

/// Parses `ttft,tpot,itl,e2el` (any subset, any order). Token-level ITL, latlab's
/// addition, is shown right after ITL whenever ITL is asked for.
pub fn metrics_from_names(names: &str) -> Result<Vec<MetricKind>, String> {
    let mut out = Vec::new();
    for name in names.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let kind = match name {
            "ttft" => MetricKind::Ttft,
            "tpot" => MetricKind::Tpot,
            "itl" => MetricKind::Itl,
            "e2el" => MetricKind::E2el,
            other => return Err(format!("unknown metric {other:?} (use ttft, tpot, itl, e2el)")),
        };
        out.push(kind);
        if kind == MetricKind::Itl {
            out.push(MetricKind::TokenItl);
        }
    }
    Ok(out)
}

/// vLLM's "Serving Benchmark Result" block for one run.
pub fn render_text(summary: &Summary, metrics: &[MetricKind]) -> String {
    serving_result(summary, metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_token_itl_follows_itl() {
        assert_eq!(
            metrics_from_names(DEFAULT_METRICS).unwrap(),
            [MetricKind::Ttft, MetricKind::Tpot, MetricKind::Itl, MetricKind::TokenItl]
        );
        assert_eq!(metrics_from_names("e2el").unwrap(), [MetricKind::E2el]);
        assert!(metrics_from_names("ttft,foo").unwrap_err().contains("foo"));
    }
}
