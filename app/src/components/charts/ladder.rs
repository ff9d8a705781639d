//! The optimization ladder: each kept step of a study against the previous one, as bars
//! and as a table. Steps are drawn under English names; the name the source printed (the
//! seed study's is Japanese) is in the hover title and the table, where the page's fonts
//! draw it.

use super::build::{change, label_with_marks, title, tooltip};
use super::facts::{run_label, stat_value};
use super::view_state::{ChartKind, ChartView};
use bench_types::{ComparisonView, RunView};
use charts::{Bar, BarChart};
use leptos::prelude::*;
use std::sync::Arc;

/// A ladder step: its name, the source's own name for it, its run, what the source
/// published for it.
pub struct Step<'a> {
    pub item: String,
    pub original: Option<String>,
    pub run: &'a RunView,
    pub published_gain: Option<String>,
}

impl Step<'_> {
    /// The name a chart draws: the step's name when it is plain ASCII, else its place
    /// ("Step 2"), with the original in the hover title (views stored before steps had
    /// English names carry the original only).
    pub fn name(&self, k: usize) -> String {
        if self.item.is_ascii() && !self.item.is_empty() { self.item.clone() } else { format!("Step {k}") }
    }
}

/// The steps from the comparison's stored view (`{"ladder": {"baseline": id, "steps":
/// [{"item", "original" or "section", "run", "published_gain"}]}}`), else every run in order.
pub fn ladder_steps(c: &ComparisonView) -> Vec<Step<'_>> {
    let find = |id: Option<i64>| id.and_then(|id| c.runs.iter().find(|r| r.id == id));
    let l = &c.view["ladder"];
    if let Some(base) = find(l["baseline"].as_i64()) {
        let mut steps =
            vec![Step { item: "Baseline".into(), original: None, run: base, published_gain: None }];
        for s in l["steps"].as_array().into_iter().flatten() {
            if let Some(run) = find(s["run"].as_i64()) {
                let item = s["item"].as_str().unwrap_or_default().to_string();
                let original = s["original"]
                    .as_str()
                    .or(s["section"].as_str())
                    .filter(|o| *o != item)
                    .map(str::to_string);
                steps.push(Step {
                    item,
                    original,
                    run,
                    published_gain: s["published_gain"].as_str().map(str::to_string),
                });
            }
        }
        return steps;
    }
    c.runs.iter().map(|r| Step { item: run_label(r), original: None, run: r, published_gain: None }).collect()
}

/// Each step's value and its change against the previous step that has one.
fn changes(steps: &[Step<'_>], view: &ChartView) -> Vec<(Option<f64>, Option<String>)> {
    let mut prev: Option<f64> = None;
    steps
        .iter()
        .map(|s| {
            let v = stat_value(s.run, view.metric, view.stat);
            let ch = match (prev, v) {
                (Some(p), Some(v)) if v > 0.0 && p > 0.0 => Some(change(v, p, view.metric)),
                _ => None,
            };
            if v.is_some() {
                prev = v;
            }
            (v, ch)
        })
        .collect()
}

/// Bars of each step, noted with the change against the previous step ("(-20.6% TPOT,
/// 1.26x faster; study: +25.8% speed-up)") and the study's own figure where it printed one.
pub fn ladder(c: &ComparisonView, view: &ChartView) -> BarChart {
    let steps = ladder_steps(c);
    let bars = steps
        .iter()
        .zip(changes(&steps, view))
        .enumerate()
        .map(|(k, (s, (v, ch)))| {
            let note = match (ch, &s.published_gain) {
                (Some(ch), Some(g)) => Some(format!("({ch}; study: {g} speed-up)")),
                (Some(ch), None) => Some(format!("({ch})")),
                (None, Some(g)) => Some(format!("(study: {g} speed-up)")),
                (None, None) => None,
            };
            let name = s.name(k);
            let named = match &s.original {
                Some(o) => format!("{name} ({o})"),
                None => name.clone(),
            };
            Bar {
                // Short enough to leave the bars room; the table and hover have it whole.
                label: charts::fit(&format!("{name}: {}", label_with_marks(c, s.run)), 300.0, 12.0),
                value: v,
                tooltip: format!("{named}: {}", tooltip(c, s.run, view, v)),
                note,
                highlight: k == 0 && s.item == "Baseline",
            }
        })
        .collect();
    BarChart {
        title: title(c, format!("Optimization ladder: {}", view.axis_title())),
        axis: format!("{}, lower is better; notes: each step against the previous", view.axis_title()),
        bars,
    }
}

/// The ladder as a table under the chart: step, the source's own name for it, run, value,
/// change against the previous step, and the study's figure.
#[component]
pub fn LadderTable(c: Arc<ComparisonView>, view: Memo<ChartView>) -> impl IntoView {
    move || {
        let v = view.get();
        (v.kind == ChartKind::Ladder).then(|| {
            let steps = ladder_steps(&c);
            let rows = steps
                .iter()
                .zip(changes(&steps, &v))
                .enumerate()
                .map(|(k, (s, (value, ch)))| {
                    let value = value.map(|x| format!("{x:.2}")).unwrap_or_else(|| "missing".into());
                    view! {
                        <tr>
                            <td>{s.name(k)}</td>
                            <td lang="ja">{s.original.clone().unwrap_or_default()}</td>
                            <td><a href=format!("/runs/{}", s.run.id)>{run_label(s.run)}</a></td>
                            <td class="num">{value}</td>
                            <td>{ch.unwrap_or_default()}</td>
                            <td>{s.published_gain.clone().map(|g| format!("{g} speed-up")).unwrap_or_default()}</td>
                        </tr>
                    }
                })
                .collect_view();
            view! {
                <div class="table-wrap"><table class="runs chart-ladder">
                    <thead><tr>
                        <th>"Step"</th><th>"As the source names it"</th><th>"Run"</th><th>{v.axis_title()}</th>
                        <th>"Against the previous step"</th><th>"The study's figure"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                </table></div>
            }
        })
    }
}
