//! Latency against throughput: for each configuration (target and everything else but the
//! load), one point per run at the throughput it reached (x) and the chosen statistic of
//! the chosen latency (y), joined in load order (concurrency, then request rate, inf
//! last). Past saturation more load brings no more throughput, only latency: the line
//! turns up, or folds back when throughput falls, which is why it follows the load and
//! not the x axis.

use super::build::{short, title};
use super::facts::{chart_label, imported, stat_value};
use super::view_state::{ChartView, CurveX};
use bench_types::{ComparisonView, RunView};
use charts::{LineChart, Series};

/// The configuration a run belongs to: its spec without label and load.
fn config_key(r: &RunView) -> String {
    let mut spec = r.spec.clone();
    spec.label.clear();
    spec.load.max_concurrency.clear();
    spec.load.request_rate = None;
    spec.load.request_rates.clear();
    if let bench_types::Target::Imported(t) = &mut spec.target {
        // Same configuration, different lines of the document.
        t.source = t.source.split(", line").next().unwrap_or_default().to_string();
        t.variant = None;
    }
    serde_json::to_string(&spec).unwrap_or_default()
}

/// Where a run sits in its line: by concurrency (no cap last), then by rate (inf last).
fn load_order(r: &RunView) -> (u32, f64) {
    let l = &r.spec.load;
    (l.max_concurrency.first().copied().unwrap_or(u32::MAX), l.request_rate.unwrap_or(f64::INFINITY))
}

/// A line's name: the label without the load it carries, else the target.
fn line_name(r: &RunView) -> String {
    let label = r.spec.label.replace(&r.spec.load_label(), "");
    let label = label.trim().trim_end_matches(['-', '·']).trim();
    if label.is_empty() { r.target_description.clone() } else { label.to_string() }
}

fn x_of(r: &RunView, x: CurveX) -> Option<f64> {
    let s = r.summary.as_ref().filter(|s| s.completed > 0)?;
    if imported(r).is_some_and(|t| t.lacks(x.summary_key())) {
        return None;
    }
    Some(match x {
        CurveX::Tokens => s.output_throughput,
        CurveX::Requests => s.request_throughput,
    })
}

pub fn curve(c: &ComparisonView, view: &ChartView) -> LineChart {
    let mut groups: Vec<(String, String, Vec<&RunView>)> = Vec::new();
    for r in &c.runs {
        let key = config_key(r);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.2.push(r),
            None => groups.push((key, line_name(r), vec![r])),
        }
    }
    let mut left_out = 0;
    let series: Vec<Series> = groups
        .into_iter()
        .filter_map(|(_, name, mut runs)| {
            runs.sort_by(|a, b| {
                let (ka, kb) = (load_order(a), load_order(b));
                ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
            });
            let pts: Vec<((f64, f64), String)> = runs
                .iter()
                .filter_map(|r| {
                    let point = x_of(r, view.x).zip(stat_value(r, view.metric, view.stat));
                    if point.is_none() {
                        left_out += 1;
                    }
                    let (x, y) = point?;
                    Some(((x, y), tooltip(c, r, view, x, y)))
                })
                .collect();
            (!pts.is_empty()).then(|| Series {
                label: name,
                points: pts.iter().map(|p| p.0).collect(),
                tooltips: pts.into_iter().map(|p| p.1).collect(),
                missing: vec![],
            })
        })
        .collect();
    let mut x_desc = view.x.axis_title().to_string();
    if left_out > 0 {
        x_desc.push_str(&format!("; {left_out} run(s) without a result or this number not drawn"));
    }
    LineChart {
        title: title(c, format!("{} against {}", view.axis_title(), view.x.words())),
        x_desc,
        y_desc: view.axis_title(),
        series,
        log_x: false,
        log_y: view.log,
        markers: true,
        x_int: false,
        empty: format!(
            "No run here has both {} and {} yet: nothing to draw until runs finish.",
            view.x.words(),
            view.axis_title()
        ),
    }
}

fn tooltip(c: &ComparisonView, r: &RunView, view: &ChartView, x: f64, y: f64) -> String {
    let (who, mut load) = (chart_label(c, r), r.spec.load_label());
    if !load.contains("rate") {
        // "BS=8" alone reads as a concurrency run; beside rates, say it had none.
        load.push_str(" rate=inf");
    }
    let who = if who.contains(&load) { who } else { format!("{who} ({load})") };
    let goodput = r
        .summary
        .as_ref()
        .and_then(|s| s.goodput)
        .map(|g| format!("; goodput {g:.2} req/s"))
        .unwrap_or_default();
    format!(
        "{who}: {x:.2} {}, {} {} {y:.2} {}{goodput}",
        view.x.unit(),
        short(view.metric),
        view.stat.label(),
        view.metric.info().unit
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::charts::view_state::{ChartKind, Stat};
    use bench_types::MetricKind;
    use serde_json::json;

    /// A run of a rate sweep at `rate` (None = inf) that reached `tput` tok/s with `p99`
    /// ms of TTFT at its 99th percentile.
    fn run(
        id: i64,
        label: &str,
        base_url: &str,
        rate: Option<f64>,
        tput: f64,
        p99: f64,
    ) -> serde_json::Value {
        let stats = json!({"mean_ms": p99 / 2.0, "median_ms": p99 / 2.0, "std_ms": 1.0, "percentiles": [[99.0, p99]]});
        json!({
            "id": id, "status": "succeeded", "target_description": format!("external {base_url}"),
            "created_at": "2025-01-01T00:00:00Z", "started_at": null, "finished_at": null, "error": null,
            "spec": {"label": label, "target": {"kind": "external", "base_url": base_url}, "model": "m",
                "num_prompts": 10, "dataset": {"kind": "random", "input_len": 4, "output_len": 2},
                "load": {"max_concurrency": [8], "request_rate": rate}},
            "summary": {"completed": 10, "failed": 0, "duration_s": 5.0, "total_input_tokens": 40,
                "total_output_tokens": 20, "request_throughput": tput / 2.0, "goodput": 1.5,
                "output_throughput": tput, "total_token_throughput": tput * 3.0, "peak_output_throughput": tput,
                "peak_concurrent_requests": 8, "ttft": stats, "tpot": stats, "itl": stats, "e2el": stats}
        })
    }

    fn comparison(runs: Vec<serde_json::Value>) -> ComparisonView {
        serde_json::from_value(json!({
            "slug": "s", "title": "rates", "view": {}, "created_at": "2025-01-01T00:00:00Z", "runs": runs
        }))
        .unwrap()
    }

    fn p99_ttft(x: CurveX) -> ChartView {
        ChartView {
            kind: ChartKind::Curve,
            metric: MetricKind::Ttft,
            stat: Stat::P(99.0),
            x,
            ..ChartView::default()
        }
    }

    /// Two engines, each a line; points in load order even where throughput falls back.
    #[test]
    fn one_line_per_engine_joined_in_load_order() {
        let c = comparison(vec![
            run(1, "a", "http://a", None, 90.0, 400.0),
            run(2, "a", "http://a", Some(1.0), 20.0, 30.0),
            run(3, "a", "http://a", Some(4.0), 100.0, 80.0),
            run(4, "b", "http://b", Some(1.0), 21.0, 25.0),
            run(5, "b", "http://b", Some(4.0), 70.0, 60.0),
        ]);
        let chart = curve(&c, &p99_ttft(CurveX::Tokens));
        assert_eq!(chart.series.len(), 2);
        assert_eq!(chart.series[0].label, "a");
        assert_eq!(chart.series[0].points, vec![(20.0, 30.0), (100.0, 80.0), (90.0, 400.0)]);
        assert!(chart.series[0].tooltips[2].contains("rate=inf"), "{:?}", chart.series[0].tooltips);
        assert!(chart.series[0].tooltips[0].contains("goodput 1.50 req/s"));
        let by_requests = curve(&c, &p99_ttft(CurveX::Requests));
        assert_eq!(by_requests.series[1].points, vec![(10.5, 25.0), (35.0, 60.0)]);
        assert_eq!(by_requests.x_desc, "request throughput (req/s)");
        let svg = charts::line_chart(&chart).unwrap();
        assert!(svg.contains("viewBox=\"0 0 "));
        assert_eq!(svg.matches("stroke-width=\"2\" points=").count(), 2, "a line per engine");
        assert!(svg.contains("<title>#5 b BS=8 rate=4/s: 70.00 tok/s, TTFT p99 60.00 ms"), "{svg}");
        assert_eq!(charts::texts_outside(&svg), Vec::<String>::new());
    }

    #[test]
    fn runs_without_a_result_are_counted_not_drawn_as_zero() {
        let mut queued = run(2, "a", "http://a", Some(2.0), 0.0, 0.0);
        queued["summary"] = serde_json::Value::Null;
        let c = comparison(vec![run(1, "a", "http://a", Some(1.0), 20.0, 30.0), queued]);
        let chart = curve(&c, &p99_ttft(CurveX::Tokens));
        assert_eq!(chart.series[0].points, vec![(20.0, 30.0)]);
        assert!(chart.x_desc.contains("1 run(s) without a result"), "{}", chart.x_desc);
        let none = curve(&comparison(vec![]), &p99_ttft(CurveX::Tokens));
        assert!(charts::line_chart(&none).unwrap().contains("nothing to draw until runs finish"));
    }
}
