//! A comparison and a view into the chart's data, then SVG (via the `charts` crate). The
//! server's `/c/<slug>/chart.svg` and the page (server render and browser re-render) all
//! call `render`, so the download is exactly what was on screen.
//!
//! Chart text is plain ASCII English (fonts without CJK or symbol glyphs draw boxes); a
//! run lacking a number is drawn as missing, never as 0; hover titles name files without
//! the server's folders.

use super::facts::{chart_label, imported, marks, source_name, stat_value};
use super::view_state::{ChartKind, ChartView};
use bench_types::{ComparisonView, MetricKind, RequestRecord, RunView};
use charts::{Bar, BarChart, LineChart, Series};

/// The SVG for `view` of `c`; `records` (run id, its requests) feed the CDF and may be
/// empty for every other kind.
pub fn render(
    c: &ComparisonView,
    view: &ChartView,
    records: &[(i64, Vec<RequestRecord>)],
) -> Result<String, String> {
    let svg = match view.kind {
        ChartKind::Cdf => charts::line_chart(&super::cdf::cdf(c, view, records)),
        ChartKind::Bars => charts::bar_chart(&bars(c, view)),
        ChartKind::Sweep => charts::line_chart(&sweep(c, view)),
        ChartKind::Ladder => charts::bar_chart(&super::ladder::ladder(c, view)),
        ChartKind::Curve => charts::line_chart(&super::curve::curve(c, view)),
    };
    svg.map_err(|e| e.to_string())
}

/// The run's label with its marks; "imported" only when the set mixes imported and
/// measured runs (an all-imported set says so in the title instead).
pub(super) fn label_with_marks(c: &ComparisonView, r: &RunView) -> String {
    let all_imported = c.runs.iter().all(|r| imported(r).is_some());
    let m: Vec<&str> = marks(r).into_iter().filter(|m| !(all_imported && *m == "imported")).collect();
    if m.is_empty() { chart_label(c, r) } else { format!("{} [{}]", chart_label(c, r), m.join(", ")) }
}

pub(super) fn title(c: &ComparisonView, what: String) -> String {
    let all_imported = !c.runs.is_empty() && c.runs.iter().all(|r| imported(r).is_some());
    format!("{what} - {}{}", c.title, if all_imported { " (all runs imported)" } else { "" })
}

/// "TTFT", "ITL": the metric in a note.
pub(super) fn short(metric: MetricKind) -> String {
    match metric {
        MetricKind::TokenItl => "token ITL".into(),
        m => m.info().key.to_uppercase(),
    }
}

pub(super) fn tooltip(c: &ComparisonView, r: &RunView, view: &ChartView, v: Option<f64>) -> String {
    let value = v
        .map(|v| format!("{v} {}", view.metric.info().unit))
        .unwrap_or_else(|| "missing (not in the source or not measured)".into());
    let mut t = format!("{} - {}: {value}; {}", chart_label(c, r), view.axis_title(), r.spec.load_label());
    if let Some(i) = imported(r) {
        t.push_str(&format!("; imported from {}", source_name(&i.source)));
    }
    t
}

/// `v` against `base` for a lower-is-better metric, signs read as they are: "-52.1% TTFT,
/// 2.09x faster" when it fell, "+12.0% TTFT, 1.12x slower" when it rose.
pub(super) fn change(v: f64, base: f64, metric: MetricKind) -> String {
    let pct = (v / base - 1.0) * 100.0;
    if pct.abs() < 0.05 {
        return format!("same {}", short(metric));
    }
    let (ratio, word) = if v < base { (base / v, "faster") } else { (v / base, "slower") };
    format!("{pct:+.1}% {}, {ratio:.2}x {word}", short(metric))
}

pub fn bars(c: &ComparisonView, view: &ChartView) -> BarChart {
    let base = view.baseline.and_then(|id| c.runs.iter().find(|r| r.id == id));
    let base_v = base.and_then(|b| stat_value(b, view.metric, view.stat)).filter(|v| *v > 0.0);
    let bars = c
        .runs
        .iter()
        .map(|r| {
            let v = stat_value(r, view.metric, view.stat);
            let is_base = base.is_some_and(|b| b.id == r.id);
            let note = match (is_base, v, base_v) {
                (true, _, _) => Some("(baseline)".to_string()),
                (false, Some(v), Some(b)) if v > 0.0 => {
                    Some(format!("({} than baseline)", change(v, b, view.metric)))
                }
                _ => None,
            };
            Bar {
                label: label_with_marks(c, r),
                value: v,
                tooltip: tooltip(c, r, view, v),
                note,
                highlight: is_base,
            }
        })
        .collect();
    BarChart {
        title: title(c, view.axis_title()),
        axis: format!("{}, lower is better", view.axis_title()),
        bars,
    }
}

/// Runs grouped by configuration (everything but the concurrency and the label), one line
/// each, for groups that vary the concurrency. A run lacking the statistic breaks its line.
pub fn sweep(c: &ComparisonView, view: &ChartView) -> LineChart {
    let mut groups: Vec<(String, String, Vec<&RunView>)> = Vec::new();
    for r in &c.runs {
        let mut spec = r.spec.clone();
        spec.load.max_concurrency.clear();
        spec.label.clear();
        if let bench_types::Target::Imported(t) = &mut spec.target {
            // Same configuration, different lines of the document.
            t.source = t.source.split(", line").next().unwrap_or_default().to_string();
            t.variant = None;
        }
        let key = serde_json::to_string(&spec).unwrap_or_default();
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.2.push(r),
            None => {
                // The first run's label without its concurrency names the line.
                let bs = format!(" BS={}", r.spec.load.max_concurrency.first().copied().unwrap_or_default());
                let name = if r.spec.label.is_empty() {
                    r.target_description.clone()
                } else {
                    r.spec.label.replace(&bs, "")
                };
                groups.push((key, name, vec![r]));
            }
        }
    }
    let series: Vec<Series> = groups
        .into_iter()
        .filter(|g| {
            g.2.iter()
                .filter_map(|r| r.spec.load.max_concurrency.first())
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                >= 2
        })
        .map(|(_, name, runs)| {
            let mut pts: Vec<(f64, Option<f64>, String)> = runs
                .iter()
                .filter_map(|r| {
                    let x = *r.spec.load.max_concurrency.first()? as f64;
                    let v = stat_value(r, view.metric, view.stat);
                    Some((x, v, tooltip(c, r, view, v)))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (have, lack): (Vec<_>, Vec<_>) = pts.into_iter().partition(|p| p.1.is_some());
            Series {
                label: name,
                points: have.iter().map(|p| (p.0, p.1.unwrap_or_default())).collect(),
                tooltips: have.into_iter().map(|p| p.2).collect(),
                missing: lack.into_iter().map(|p| (p.0, p.2)).collect(),
            }
        })
        .collect();
    let empty = if series.is_empty() {
        "No configuration here ran at two or more concurrencies: nothing to draw against concurrency."
            .to_string()
    } else {
        format!(
            "No run of these sweeps has {}: it is missing (not in the source or not measured).",
            view.axis_title()
        )
    };
    LineChart {
        title: title(c, format!("{} against concurrency", view.axis_title())),
        x_desc: "max concurrency (BS)".into(),
        y_desc: view.axis_title(),
        series,
        log_x: false,
        log_y: view.log,
        markers: true,
        x_int: true,
        empty,
    }
}
