//! The run page's analysis section: the distribution table, a histogram or CDF of the
//! chosen metric and the request timeline, every choice a plain link or GET form (usable
//! with JavaScript off) that changes the URL, which the page answers from.

use super::distributions::{DistRow, PERCENTILES};
use super::view::{Dist, RunChartView};
use crate::components::ServerSvg;
use crate::format::f2;
use crate::server_fns::{RunChartsData, get_run_charts};
use bench_types::result_block::percentile_label;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use serde::{Deserialize, Serialize};

/// `RunChartsData` as the section's resource holds it: the table's rows travel in the
/// hydration data, the two charts only as the HTML's markup (`ServerSvg` says why).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Shown {
    rows: Vec<DistRow>,
    distribution: ServerSvg,
    timeline: ServerSvg,
}

impl From<RunChartsData> for Shown {
    fn from(d: RunChartsData) -> Self {
        Self { rows: d.rows, distribution: d.distribution_svg.into(), timeline: d.timeline_svg.into() }
    }
}

#[component]
pub fn RunCharts(id: i64) -> impl IntoView {
    let query = use_query_map();
    let view =
        Memo::new(move |_| query.with(|q| RunChartView::parse(|k| q.get(k))).map_err(|e| e.to_string()));
    #[cfg(feature = "ssr")]
    if let (Err(_), Some(resp)) = (view.get_untracked(), use_context::<leptos_axum::ResponseOptions>()) {
        resp.set_status(http::StatusCode::BAD_REQUEST);
    }
    let data = Resource::new(
        move || view.get().ok().map(|v| v.to_query()),
        move |q| async move {
            match q {
                Some(q) => get_run_charts(id, q).await.map(|d| d.map(Shown::from)).map_err(|e| e.to_string()),
                None => Ok(None),
            }
        },
    );
    let body = move || {
        let v = match view.get() {
            Ok(v) => v,
            Err(e) => {
                return view! { <p class="error chart-error" role="alert">"Bad chart parameter: "{e}</p> }
                    .into_any();
            }
        };
        match data.get() {
            None => view! { <p class="muted">"Loading the requests…"</p> }.into_any(),
            Some(Err(e)) => view! { <p class="error">{format!("Could not load the requests: {e}")}</p> }.into_any(),
            Some(Ok(None)) => view! {
                <p class="muted" data-testid="no-records">
                    "No per-request records for this run (an imported run keeps only its summary), so there are no distributions or timeline to show."
                </p>
            }
            .into_any(),
            Some(Ok(Some(d))) => view! { <Analysis id v d/> }.into_any(),
        }
    };
    // Effects run only in the browser: marks the section once hydrated (links then
    // navigate in place), which browser tests wait for.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <section class="run-charts" id="analysis" data-hydrated=move || hydrated.get().then_some("true")>
            <h2>"Latency distributions and timeline"</h2>
            <Suspense fallback=|| view! { <p class="muted">"Loading the requests…"</p> }>{body}</Suspense>
        </section>
    }
}

#[component]
fn Analysis(id: i64, v: RunChartView, d: Shown) -> impl IntoView {
    let metric_links = super::distributions::METRICS
        .into_iter()
        .map(|m| {
            let to = RunChartView { metric: m, ..v.clone() };
            let label = super::render::label(m);
            let current = (m == v.metric).then_some("page");
            view! { <a href=format!("{}#analysis", to.href()) aria-current=current>{label}</a>" " }
        })
        .collect_view();
    let dist_links = Dist::ALL
        .into_iter()
        .map(|k| {
            let to = RunChartView { dist: k, ..v.clone() };
            let current = (k == v.dist).then_some("page");
            view! { <a href=format!("{}#analysis", to.href()) aria-current=current>{k.title()}</a>" " }
        })
        .collect_view();
    let whole = RunChartView { from: None, to: None, ..v.clone() };
    let svg_q = |chart: &str| {
        let q = v.to_query();
        format!("/runs/{id}/chart.svg?chart={chart}{}{q}", if q.is_empty() { "" } else { "&" })
    };
    let num = |x: Option<f64>| x.map(|x| x.to_string()).unwrap_or_default();
    view! {
        <DistTable rows=d.rows/>
        <p class="chart-controls">"Metric: "{metric_links}" · Chart: "{dist_links}</p>
        <div class="chart chart-distribution" inner_html=d.distribution.0></div>
        <p class="downloads"><a href=svg_q("distribution") download="latlab-distribution.svg">"SVG"</a></p>
        <h3>"Request timeline"</h3>
        <form method="get" class="chart-controls zoom" action="#analysis">
            <input type="hidden" name="metric" value=v.metric.info().key/>
            <input type="hidden" name="dist" value=v.dist.key()/>
            <label>"From (s) "<input name="from" type="number" step="any" min="0" value=num(v.from)/></label>
            <label>"To (s) "<input name="to" type="number" step="any" min="0" value=num(v.to)/></label>
            <button type="submit">"Zoom"</button>
            <a href=format!("{}#analysis", whole.href())>"Whole run"</a>
        </form>
        <div class="chart chart-timeline" inner_html=d.timeline.0></div>
        <p class="downloads"><a href=svg_q("timeline") download="latlab-timeline.svg">"SVG"</a></p>
    }
}

#[component]
fn DistTable(rows: Vec<DistRow>) -> impl IntoView {
    let heads = PERCENTILES.map(|p| format!("p{}", percentile_label(p)));
    view! {
        // Ten columns do not fit a phone: the table scrolls in its own box, not the page.
        <div class="table-wrap"><table class="dist-table" data-testid="dist-table">
            <thead><tr>
                <th>"Metric (ms)"</th><th class="num">"n"</th><th class="num">"mean"</th><th class="num">"std"</th>
                {heads.into_iter().map(|h| view! { <th class="num">{h}</th> }).collect_view()}
            </tr></thead>
            <tbody>
                {rows.into_iter().map(|r| {
                    let cells = if r.count == 0 {
                        vec!["n/a".to_string(); 2 + PERCENTILES.len()]
                    } else {
                        let mut c = vec![f2(r.stats.mean_ms), f2(r.stats.std_ms)];
                        c.extend(PERCENTILES.iter().map(|p| r.stats.percentile(*p).map(f2).unwrap_or_default()));
                        c
                    };
                    view! {
                        <tr data-metric=r.metric.info().key>
                            <th>{super::render::label(r.metric)}</th>
                            <td class="num">{r.count}</td>
                            {cells.into_iter().map(|c| view! { <td class="num">{c}</td> }).collect_view()}
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table></div>
    }
}
