//! A comparison at its permalink `/c/<slug>`: the runs side by side (charts come later).

use crate::components::StatusBadge;
use crate::format::f2;
use crate::pages::NotFound;
use crate::server_fns::get_comparison;
use bench_types::{ComparisonView, Stats};
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

#[component]
pub fn ComparisonPage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let cmp = Resource::new(slug, get_comparison);
    view! {
        <Suspense fallback=|| view! { <p>"Loading comparison…"</p> }>
            {move || cmp.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load the comparison: {e}")}</p> }.into_any(),
                Ok(None) => view! { <NotFound/> }.into_any(),
                Ok(Some(c)) => view! { <ComparisonTable c/> }.into_any(),
            })}
        </Suspense>
    }
}

fn stat_cells(s: Option<&Stats>) -> impl IntoView + use<> {
    let (mean, median, p99) = match s {
        Some(s) => (f2(s.mean_ms), f2(s.median_ms), s.percentile(99.0).map(f2).unwrap_or_else(|| "–".into())),
        None => ("–".into(), "–".into(), "–".into()),
    };
    view! { <td class="num">{mean}</td><td class="num">{median}</td><td class="num">{p99}</td> }
}

#[component]
fn ComparisonTable(c: ComparisonView) -> impl IntoView {
    let rows = c
        .runs
        .into_iter()
        .map(|r| {
            let summary = r.summary.clone();
            let s = summary.as_ref();
            let label = if r.spec.label.is_empty() { r.target_description.clone() } else { r.spec.label.clone() };
            let tput = s.map(|s| f2(s.output_throughput)).unwrap_or_else(|| "–".into());
            view! {
                <tr data-run-id=r.id>
                    <td><a href=format!("/runs/{}", r.id)>{format!("#{}", r.id)}</a></td>
                    <td>{label}</td>
                    <td>{r.spec.load_label()}</td>
                    <td><StatusBadge status=r.status/></td>
                    {stat_cells(s.map(|s| &s.ttft))}
                    {stat_cells(s.map(|s| &s.tpot))}
                    {stat_cells(s.map(|s| &s.itl))}
                    <td class="num">{tput}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h1>{c.title.clone()}</h1>
        <p class="muted">"Permalink: " <code>{format!("/c/{}", c.slug)}</code></p>
        <table class="runs comparison">
            <thead>
                <tr>
                    <th rowspan="2">"Run"</th><th rowspan="2">"Label"</th><th rowspan="2">"Load"</th><th rowspan="2">"Status"</th>
                    <th colspan="3">"TTFT (ms)"</th><th colspan="3">"TPOT (ms)"</th><th colspan="3">"ITL (ms, chunk)"</th>
                    <th rowspan="2">"Output tok/s"</th>
                </tr>
                <tr>
                    <th>"mean"</th><th>"median"</th><th>"p99"</th>
                    <th>"mean"</th><th>"median"</th><th>"p99"</th>
                    <th>"mean"</th><th>"median"</th><th>"p99"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
    }
}
