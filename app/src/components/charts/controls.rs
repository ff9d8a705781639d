//! The view pickers: chart kind, metric, statistic, the latency-throughput chart's x axis,
//! baseline, the other run of the configuration diff, log scale. A plain GET form (works with JavaScript off: "Apply"
//! reloads with the new query); once hydrated every change navigates to the new URL at
//! once, so the address bar always holds the view.

use super::facts::{percentiles, run_label};
use super::view_state::{ChartKind, ChartView, CurveX, Stat};
use bench_types::{ComparisonView, METRICS, MetricKind};
use leptos::prelude::*;
use leptos_router::NavigateOptions;
use leptos_router::hooks::use_navigate;

/// The URL of `view` on the comparison `slug`.
pub fn view_url(slug: &str, view: &ChartView) -> String {
    let q = view.to_query();
    if q.is_empty() { format!("/c/{slug}") } else { format!("/c/{slug}?{q}") }
}

#[component]
pub fn ChartControls(c: std::sync::Arc<ComparisonView>, view: Memo<ChartView>) -> impl IntoView {
    let navigate = use_navigate();
    let slug = c.slug.clone();
    let go = move |change: &dyn Fn(&mut ChartView)| {
        let mut v = view.get_untracked();
        change(&mut v);
        navigate(&view_url(&slug, &v), NavigateOptions { scroll: false, ..Default::default() });
    };
    let kind_opts = ChartKind::ALL
        .into_iter()
        .map(|k| view! { <option value=k.key() selected=move || view.get().kind == k>{k.title()}</option> })
        .collect_view();
    let metric_opts = METRICS
        .iter()
        .map(|m| {
            let kind = m.kind;
            let text = match kind {
                MetricKind::Itl => "ITL (chunk-level, as vLLM)".to_string(),
                MetricKind::TokenItl => "ITL (token-level)".to_string(),
                _ => m.title.to_string(),
            };
            view! { <option value=m.key selected=move || view.get().metric == kind>{text}</option> }
        })
        .collect_view();
    let stats: Vec<Stat> =
        [Stat::Mean, Stat::Median].into_iter().chain(percentiles(&c).into_iter().map(Stat::P)).collect();
    let stat_opts = stats
        .into_iter()
        .map(|s| view! { <option value=s.key() selected=move || view.get().stat == s>{s.label()}</option> })
        .collect_view();
    let run_opts = |pick: fn(&ChartView) -> Option<i64>| {
        let none = view! { <option value="" selected=move || pick(&view.get()).is_none()>"none"</option> };
        let runs = c
            .runs
            .iter()
            .map(|r| {
                let id = r.id;
                view! { <option value=id.to_string() selected=move || pick(&view.get()) == Some(id)>{run_label(r)}</option> }
            })
            .collect_view();
        (none, runs)
    };
    let x_opts = CurveX::ALL
        .into_iter()
        .map(|x| view! { <option value=x.key() selected=move || view.get().x == x>{x.axis_title()}</option> })
        .collect_view();
    let (g1, g2, g3, g4, g5, g6) = (go.clone(), go.clone(), go.clone(), go.clone(), go.clone(), go.clone());
    let g7 = go;
    view! {
        <form class="chart-controls" method="get" action=format!("/c/{}", c.slug)>
            <label>"Chart "
                <select name="chart" on:change=move |ev| {
                    let k = event_target_value(&ev);
                    g1(&|v| v.kind = ChartKind::ALL.into_iter().find(|c| c.key() == k).unwrap_or(ChartKind::Bars))
                }>{kind_opts}</select>
            </label>
            <label>"Metric "
                <select name="metric" on:change=move |ev| {
                    let k = event_target_value(&ev);
                    g2(&|v| if let Some(m) = METRICS.iter().find(|m| m.key == k) { v.metric = m.kind })
                }>{metric_opts}</select>
            </label>
            <label>"Statistic "
                <select name="p" on:change=move |ev| {
                    let k = event_target_value(&ev);
                    g3(&|v| if let Some(s) = Stat::parse(&k) { v.stat = s })
                }>{stat_opts}</select>
            </label>
            <label title="The x axis of the latency-throughput chart">"Throughput "
                <select name="x" on:change=move |ev| {
                    let k = event_target_value(&ev);
                    g7(&|v| if let Some(x) = CurveX::ALL.into_iter().find(|x| x.key() == k) { v.x = x })
                }>{x_opts}</select>
            </label>
            <label>"Baseline "
                <select name="baseline" style="max-width: 18em" on:change=move |ev| {
                    let k = event_target_value(&ev);
                    g4(&|v| v.baseline = k.parse().ok())
                }>{run_opts(|v| v.baseline)}</select>
            </label>
            <label>"Diff against "
                <select name="other" style="max-width: 18em" on:change=move |ev| {
                    let k = event_target_value(&ev);
                    g5(&|v| v.other = k.parse().ok())
                }>{run_opts(|v| v.other)}</select>
            </label>
            // Bars start at 0 so that their lengths compare: the log scale is for lines only.
            <label class="chart-log" title="For the line charts (sweep, latency-throughput, CDF); bars always start at 0">
                <input type="checkbox" name="log" value="1" prop:checked=move || view.get().log prop:disabled=move || !view.get().log_applies() on:change=move |ev| {
                    let on = event_target_checked(&ev);
                    g6(&|v| v.log = on)
                }/>
                " log scale (lines)"
            </label>
            <button type="submit">"Apply"</button>
        </form>
    }
}
