//! A comparison and a view into the chart's data, then SVG (via the `charts` crate). The
//! server's `/c/<slug>/chart.svg` and the page (server render and browser re-render) all
//! call `render`, so the download is exactly what was on screen.

use super::facts::{imported, marks, run_label, stat_value};
use super::view_state::{ChartKind, ChartView};
use bench_types::{ComparisonView, RequestRecord, RunView};
use charts::{Bar, BarChart, LineChart, Series};

/// The SVG for `view` of `c`; `records` (run id, its requests) feed the CDF and may be
/// empty for every other kind.
pub fn render(c: &ComparisonView, view: &ChartView, records: &[(i64, Vec<RequestRecord>)]) -> Result<String, String> {
    let svg = match view.kind {
        ChartKind::Cdf => charts::line_chart(&super::cdf::cdf(c, view, records)),
        ChartKind::Bars => charts::bar_chart(&bars(c, view)),
        ChartKind::Sweep => charts::line_chart(&sweep(c, view)),
        ChartKind::Ladder => charts::bar_chart(&ladder(c, view)),
    };
    svg.map_err(|e| e.to_string())
}

/// The run's label with its marks; "imported" only when the set mixes imported and
/// measured runs (an all-imported set says so in the title instead).
fn label_with_marks(c: &ComparisonView, r: &RunView) -> String {
    let all_imported = c.runs.iter().all(|r| imported(r).is_some());
    let m: Vec<&str> = marks(r).into_iter().filter(|m| !(all_imported && *m == "imported")).collect();
    if m.is_empty() { run_label(r) } else { format!("{} [{}]", run_label(r), m.join(", ")) }
}

fn title(c: &ComparisonView, what: String) -> String {
    let all_imported = !c.runs.is_empty() && c.runs.iter().all(|r| imported(r).is_some());
    format!("{what} — {}{}", c.title, if all_imported { " (all runs imported)" } else { "" })
}

fn tooltip(r: &RunView, view: &ChartView, v: Option<f64>) -> String {
    let value = v.map(|v| format!("{v} {}", view.metric.info().unit)).unwrap_or_else(|| "missing".into());
    let mut t = format!("{} — {}: {value}; {}", run_label(r), view.axis_title(), r.spec.load_label());
    if let Some(i) = imported(r) {
        t.push_str(&format!("; imported from {}", i.source));
    }
    t
}

/// "+12.3%" of `v` against `base`.
fn pct(v: f64, base: f64) -> String {
    format!("{:+.1}%", (v / base - 1.0) * 100.0)
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
                (false, Some(v), Some(b)) => Some(format!("({} vs baseline)", pct(v, b))),
                _ => None,
            };
            Bar { label: label_with_marks(c, r), value: v, tooltip: tooltip(r, view, v), note, highlight: is_base }
        })
        .collect();
    BarChart { title: title(c, view.axis_title()), axis: format!("{}, lower is better", view.axis_title()), bars, log: view.log }
}

/// Runs grouped by configuration (everything but the concurrency and the label), one line
/// each, for groups that vary the concurrency.
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
                let name = if r.spec.label.is_empty() { r.target_description.clone() } else { r.spec.label.replace(&bs, "") };
                groups.push((key, name, vec![r]));
            }
        }
    }
    let series = groups
        .into_iter()
        .filter(|g| g.2.iter().filter_map(|r| r.spec.load.max_concurrency.first()).collect::<std::collections::BTreeSet<_>>().len() >= 2)
        .map(|(_, name, runs)| {
            let mut pts: Vec<(f64, f64, String)> = runs
                .iter()
                .filter_map(|r| {
                    let x = *r.spec.load.max_concurrency.first()? as f64;
                    let v = stat_value(r, view.metric, view.stat)?;
                    Some((x, v, tooltip(r, view, Some(v))))
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let label: String = name.chars().take(90).collect();
            Series { label, points: pts.iter().map(|p| (p.0, p.1)).collect(), tooltips: pts.into_iter().map(|p| p.2).collect() }
        })
        .collect();
    LineChart {
        title: title(c, format!("{} against concurrency", view.axis_title())),
        x_desc: "max concurrency (BS)".into(),
        y_desc: view.axis_title(),
        series,
        log_x: false,
        log_y: view.log,
        markers: true,
    }
}

/// A ladder step: label, run, what the source published for it.
pub struct Step<'a> {
    pub item: String,
    pub run: &'a RunView,
    pub published_gain: Option<String>,
}

/// The steps from the comparison's stored view (`{"ladder": {"baseline": id, "steps":
/// [{"item", "run", "published_gain"}]}}`), else every run in order.
pub fn ladder_steps(c: &ComparisonView) -> Vec<Step<'_>> {
    let find = |id: Option<i64>| id.and_then(|id| c.runs.iter().find(|r| r.id == id));
    let l = &c.view["ladder"];
    if let Some(base) = find(l["baseline"].as_i64()) {
        let mut steps = vec![Step { item: "baseline".into(), run: base, published_gain: None }];
        for s in l["steps"].as_array().into_iter().flatten() {
            if let Some(run) = find(s["run"].as_i64()) {
                let item = s["item"].as_str().unwrap_or_default().to_string();
                steps.push(Step { item, run, published_gain: s["published_gain"].as_str().map(str::to_string) });
            }
        }
        return steps;
    }
    c.runs.iter().map(|r| Step { item: run_label(r), run: r, published_gain: None }).collect()
}

/// Each step against the previous: lower-is-better metrics gain when they drop, reported
/// as the speed-up `prev / this - 1` (the study's convention).
pub fn ladder(c: &ComparisonView, view: &ChartView) -> BarChart {
    let steps = ladder_steps(c);
    let mut prev: Option<f64> = None;
    let bars = steps
        .iter()
        .map(|s| {
            let v = stat_value(s.run, view.metric, view.stat);
            let mut note = match (prev, v) {
                (Some(p), Some(v)) if v > 0.0 => Some(format!("{:+.1}% vs previous", (p / v - 1.0) * 100.0)),
                _ => None,
            };
            if let Some(g) = &s.published_gain {
                note = Some(format!("{} (study: {g})", note.unwrap_or_default()));
            }
            if v.is_some() {
                prev = v;
            }
            Bar {
                label: format!("{} → {}", s.item, run_label(s.run)).chars().take(70).collect(),
                value: v,
                tooltip: tooltip(s.run, view, v),
                note,
                highlight: s.item == "baseline",
            }
        })
        .collect();
    BarChart {
        title: title(c, format!("Optimization ladder: {}", view.axis_title())),
        axis: format!("{}, lower is better", view.axis_title()),
        bars,
        log: view.log,
    }
}
