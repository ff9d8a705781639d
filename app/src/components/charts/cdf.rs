//! Latency CDFs from per-request records: one line per run, x = latency, y = fraction of
//! requests (or of gaps, for ITL) at or below it, drawn as the step function an empirical
//! CDF is (lines between samples would invent values no request had). Runs without
//! records (imported summaries) are named in the title rather than drawn from made-up
//! data; with none at all, the chart says so instead of showing bare axes.

use super::facts::chart_label;
use super::view_state::ChartView;
use bench_types::{ComparisonView, MetricKind, RequestRecord};
use charts::{LineChart, Series};

/// Every sample of `metric` in `records`, in milliseconds, sorted.
pub fn samples(records: &[RequestRecord], metric: MetricKind) -> Vec<f64> {
    samples_s(records, metric).into_iter().map(|v| v * 1e3).collect()
}

/// Every sample of `metric` in `records`, in seconds (the statistics convert after
/// computing, as vLLM does), sorted.
pub fn samples_s(records: &[RequestRecord], metric: MetricKind) -> Vec<f64> {
    let ok = records.iter().filter(|r| r.success);
    let mut v: Vec<f64> = match metric {
        MetricKind::Ttft => ok.filter_map(|r| r.ttft_s).collect(),
        MetricKind::E2el => ok.filter_map(|r| r.e2el_s).collect(),
        MetricKind::Tpot => ok
            .filter(|r| r.output_tokens > 1)
            .filter_map(|r| Some((r.e2el_s? - r.ttft_s?) / (r.output_tokens - 1) as f64))
            .collect(),
        // Chunk-level: every gap between successive streamed events, pooled (vLLM's ITL).
        MetricKind::Itl => ok.flat_map(|r| r.chunk_offsets_s.windows(2).map(|w| w[1] - w[0])).collect(),
        // Token-level: a gap spread over the tokens its chunk carried, when known.
        MetricKind::TokenItl => ok
            .filter_map(|r| r.chunk_tokens.as_ref().map(|t| (r, t)))
            .flat_map(|(r, t)| {
                r.chunk_offsets_s
                    .windows(2)
                    .zip(t.iter().skip(1))
                    .filter(|(_, n)| **n > 0)
                    .flat_map(|(w, n)| std::iter::repeat_n((w[1] - w[0]) / *n as f64, *n as usize))
            })
            .collect(),
    };
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    v
}

/// The empirical CDF of sorted `v` as a staircase: from 0 up at the first sample, then
/// flat to the next kept sample and up to its fraction. At most `max` steps (evenly spaced
/// ranks, the last always kept so it reaches 1); where ranks are skipped the stairs read
/// the fraction at the previous kept sample, never more than was measured.
pub fn cdf_points(v: &[f64], max: usize) -> Vec<(f64, f64)> {
    let n = v.len();
    if n == 0 {
        return vec![];
    }
    let step = n.div_ceil(max.max(1)).max(1);
    let mut idx: Vec<usize> = (0..n).step_by(step).collect();
    if idx.last() != Some(&(n - 1)) {
        idx.push(n - 1);
    }
    let mut out = Vec::with_capacity(2 * idx.len());
    let mut level = 0.0;
    for i in idx {
        out.push((v[i], level));
        level = (i + 1) as f64 / n as f64;
        out.push((v[i], level));
    }
    out
}

pub fn cdf(c: &ComparisonView, view: &ChartView, records: &[(i64, Vec<RequestRecord>)]) -> LineChart {
    let mut series = Vec::new();
    let mut without = Vec::new();
    for r in &c.runs {
        let s = records
            .iter()
            .find(|(id, _)| *id == r.id)
            .map(|(_, recs)| samples(recs, view.metric))
            .unwrap_or_default();
        if s.is_empty() {
            without.push(format!("#{}", r.id));
            continue;
        }
        series.push(Series {
            label: chart_label(c, r),
            points: cdf_points(&s, 400),
            tooltips: vec![],
            missing: vec![],
        });
    }
    let key = match view.metric {
        MetricKind::Itl => "ITL (chunk-level)".to_string(),
        MetricKind::TokenItl => "token-level ITL".to_string(),
        m => m.info().key.to_uppercase(),
    };
    let mut title = format!("{key} CDF - {}", c.title);
    if !without.is_empty() {
        title.push_str(&format!(
            " (no per-request records: {})",
            if without.len() > 6 { format!("{} runs", without.len()) } else { without.join(", ") }
        ));
    }
    LineChart {
        title,
        x_desc: format!("{key} ({})", view.metric.info().unit),
        y_desc: "fraction of samples <= x".into(),
        series,
        log_x: view.log,
        log_y: false,
        markers: false,
        x_int: false,
        empty: "No per-request data: these runs carry summaries only (imported), no single requests.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ttft: f64, offsets: Vec<f64>, tokens: Option<Vec<u32>>) -> RequestRecord {
        RequestRecord {
            index: 0,
            dispatch_offset_s: 0.0,
            success: true,
            error: None,
            input_tokens: 10,
            output_tokens: tokens.as_ref().map_or(offsets.len() as u32, |t| t.iter().sum()),
            ttft_s: Some(ttft),
            e2el_s: offsets.last().copied(),
            chunk_offsets_s: offsets,
            chunk_tokens: tokens,
        }
    }

    #[test]
    fn samples_follow_vllm_definitions() {
        let r = rec(0.010, vec![0.010, 0.020, 0.050], Some(vec![1, 1, 3]));
        assert_eq!(samples(std::slice::from_ref(&r), MetricKind::Ttft), vec![10.0]);
        let itl = samples(std::slice::from_ref(&r), MetricKind::Itl);
        assert!((itl[0] - 10.0).abs() < 1e-9 && (itl[1] - 30.0).abs() < 1e-9);
        // 5 tokens: (50 - 10) / 4 = 10 ms per output token after the first.
        assert!((samples(std::slice::from_ref(&r), MetricKind::Tpot)[0] - 10.0).abs() < 1e-9);
        // The 30 ms gap carried 3 tokens: three 10 ms token gaps, plus the 10 ms one.
        assert_eq!(samples(&[r], MetricKind::TokenItl).len(), 4);
    }

    #[test]
    fn cdf_reaches_one_and_is_thinned() {
        let v: Vec<f64> = (0..1000).map(f64::from).collect();
        let p = cdf_points(&v, 100);
        assert!(p.len() <= 2 * 101);
        assert_eq!(p.first(), Some(&(0.0, 0.0)));
        assert_eq!(p.last(), Some(&(999.0, 1.0)));
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }

    /// An empirical CDF is a step function: every segment is flat or vertical, and at each
    /// sample it reads the fraction at or below it.
    #[test]
    fn cdf_is_a_step_function() {
        let v = [10.0, 20.0, 20.0, 40.0];
        let p = cdf_points(&v, 100);
        assert!(p.windows(2).all(|w| w[0].0 == w[1].0 || w[0].1 == w[1].1), "{p:?}");
        assert_eq!(
            p,
            [
                (10.0, 0.0),
                (10.0, 0.25),
                (20.0, 0.25),
                (20.0, 0.5),
                (20.0, 0.5),
                (20.0, 0.75),
                (40.0, 0.75),
                (40.0, 1.0)
            ]
        );
    }

    /// The seed study has no per-request records: the CDF says so, no bare axes.
    #[test]
    fn an_empty_cdf_says_there_is_no_per_request_data() {
        let c = super::super::seed_fixture::seed();
        let view = ChartView { kind: super::super::ChartKind::Cdf, ..ChartView::default() };
        let svg = super::super::render(&c, &view, &[]).unwrap();
        assert!(svg.contains("No per-request data"), "{svg}");
        assert!(!svg.contains("<line") && !svg.contains("<polyline"), "bare axes: {svg}");
    }
}
