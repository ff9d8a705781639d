//! A comparison at its permalink `/c/<slug>?<view>`: warnings, the chart for the view in
//! the URL (rendered into the HTML on the server, re-rendered in the browser when the
//! view changes), downloads and exports, the runs table, and a configuration diff.

use crate::components::StatusBadge;
use crate::components::charts::facts::{hardware, imported, marks, run_label, stat_value, warnings};
use crate::components::charts::{ChartControls, ChartKind, ChartView, ConfigDiff, LadderTable, Stat, render};
use crate::components::spec_decode::accepted_length_cell;
use crate::format::f2;
use crate::pages::NotFound;
use crate::server_fns::{get_comparison, get_run_requests};
use bench_types::{ComparisonView, MetricKind, RunView, ValidationErrors};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};
use std::sync::Arc;

/// Draws the chart's SVG onto a canvas and downloads it as PNG (no server PNG renderer).
/// Plain script, because it only needs the DOM; no '<' or '&' so it survives as-is.
const PNG_SCRIPT: &str = r#"document.addEventListener('click', function (e) {
  var b = e.target.closest ? e.target.closest('[data-png]') : null;
  if (!b) return;
  var svg = document.querySelector('.chart svg');
  if (!svg) return;
  var w = svg.width.baseVal.value, h = svg.height.baseVal.value;
  var img = new Image();
  img.onload = function () {
    var c = document.createElement('canvas');
    c.width = 2 * w; c.height = 2 * h;
    var ctx = c.getContext('2d');
    ctx.scale(2, 2);
    ctx.drawImage(img, 0, 0);
    var a = document.createElement('a');
    a.download = b.getAttribute('data-png');
    a.href = c.toDataURL('image/png');
    a.click();
  };
  img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(new XMLSerializer().serializeToString(svg));
});"#;

/// How often a comparison with unfinished runs is fetched again (browser only).
const POLL: std::time::Duration = std::time::Duration::from_millis(2000);

#[component]
pub fn ComparisonPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let view = Memo::new(move |_| query.with(|q| ChartView::parse(|k| q.get(k))));
    // Bumped while any run is queued or running, so statuses, progress and charts fill in
    // as runs finish, without a reload.
    let tick = RwSignal::new(0u64);
    let cmp = Resource::new(move || (slug(), tick.get()), |(slug, _)| get_comparison(slug));
    let live = move || {
        cmp.get()
            .and_then(|r| r.ok().flatten())
            .is_some_and(|c| c.runs.iter().any(|r| !r.status.is_terminal()))
    };
    Effect::new(move |_| {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                if live() {
                    tick.update(|t| *t += 1);
                }
            },
            POLL,
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    view! {
        <Transition fallback=|| view! { <p>"Loading comparison…"</p> }>
            {move || cmp.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load the comparison: {e}")}</p> }.into_any(),
                Ok(None) => view! { <NotFound/> }.into_any(),
                Ok(Some(c)) => view! { <Comparison c=Arc::new(c) view/> }.into_any(),
            })}
        </Transition>
    }
}

#[component]
fn Comparison(c: Arc<ComparisonView>, view: Memo<Result<ChartView, ValidationErrors>>) -> impl IntoView {
    // The URL's view checked against this comparison: a bad parameter is named where the
    // chart goes (the page answers 400); controls and the rest show the default view.
    let check_c = c.clone();
    let checked =
        Memo::new(move |_| view.get().and_then(|v| v.check(&check_c).map(|_| v)).map_err(|e| e.to_string()));
    #[cfg(feature = "ssr")]
    if let (Err(_), Some(resp)) = (checked.get_untracked(), use_context::<leptos_axum::ResponseOptions>()) {
        resp.set_status(http::StatusCode::BAD_REQUEST);
    }
    let view = Memo::new(move |_| checked.get().unwrap_or_default());
    let slug = c.slug.clone();
    let chart_c = c.clone();
    // Per-request records are fetched only for the CDF (imported runs have none).
    let ids: Vec<i64> = c.runs.iter().map(|r| r.id).collect();
    let records = Resource::new(
        move || view.get().kind == ChartKind::Cdf,
        move |need| {
            let ids = ids.clone();
            async move {
                if need { get_run_requests(ids).await.map_err(|e| e.to_string()) } else { Ok(Vec::new()) }
            }
        },
    );
    let svg = move || {
        if let Err(e) = checked.get() {
            return format!(
                "<p class=\"error chart-error\" role=\"alert\">Bad chart parameter: {}</p>",
                charts::escape(&e)
            );
        }
        let recs = match records.get() {
            Some(Ok(r)) => r,
            Some(Err(e)) => return format!("<p class=\"error\">Could not load the requests: {e}</p>"),
            None => Vec::new(),
        };
        render(&chart_c, &view.get(), &recs).unwrap_or_else(|e| format!("<p class=\"error\">{e}</p>"))
    };
    let q = move || {
        let q = view.get().to_query();
        if q.is_empty() { String::new() } else { format!("?{q}") }
    };
    let svg_href = {
        let slug = slug.clone();
        move || format!("/c/{slug}/chart.svg{}", q())
    };
    let file = format!("latlab-{slug}");
    let warn = warnings(&c).into_iter().map(|w| view! { <li>{w}</li> }).collect_view();
    // Effects run only in the browser: marks the page as hydrated (controls live), which
    // browser tests wait for.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let diff_c = c.clone();
    let diff = move || {
        let v = view.get();
        let find = |id: Option<i64>| id.and_then(|id| diff_c.runs.iter().find(|r| r.id == id).cloned());
        match (find(v.baseline), find(v.other)) {
            (Some(a), Some(b)) => view! { <ConfigDiff a b/> }.into_any(),
            _ => view! { <p class="muted">"Pick a baseline and a run to diff against to see how their configurations differ."</p> }.into_any(),
        }
    };
    // Where a study published its own gains, say how they differ from the chart's.
    let has_published = c.view["ladder"]["steps"]
        .as_array()
        .is_some_and(|s| s.iter().any(|s| s["published_gain"].is_string()));
    let ladder_note = move || {
        (has_published && view.get().kind == ChartKind::Ladder).then(|| view! {
            <p class="muted ladder-note">
                "The chart compares the chosen statistic of each kept configuration with the previous one. "
                "The study's own figures compare mean request latency estimated as mean TTFT + mean TPOT × (mean output tokens − 1), "
                "rounded to 0.01 s, and measure speculative decoding against the final sweep's BS=4 run; so they differ."
            </p>
        })
    };
    let live = c.runs.iter().filter(|r| !r.status.is_terminal()).count();
    view! {
        <Title text=format!("{} · latlab", c.title)/>
        <h1>{c.title.clone()}</h1>
        {(live > 0).then(|| view! {
            <p class="live-note" data-testid="live-note">{format!("{live} of {} runs still going; this page updates as they finish.", c.runs.len())}</p>
        })}
        <p class="muted">"Permalink: " <code>{format!("/c/{}", c.slug)}</code>
            " · " <a href=format!("/c/{}/delete", c.slug) id="comparison-delete">"Delete this comparison…"</a></p>
        <crate::components::AnnotationsPanel action=format!("/c/{}/annotations", c.slug) tags=c.tags.clone() note=c.note.clone()/>
        <ul class="warnings">{warn}</ul>
        <ChartControls c=c.clone() view/>
        <Suspense fallback=|| view! { <div class="chart">"Loading chart…"</div> }>
            <div class="chart" data-hydrated=move || hydrated.get().then_some("true") inner_html=svg.clone()></div>
        </Suspense>
        {ladder_note}
        <LadderTable c=c.clone() view/>
        <crate::components::telemetry::TelemetryOverlay slug=slug.clone() series=crate::components::telemetry::parse_series(use_query_map().read_untracked().get("series"))/>
        <p class="downloads">
            "Download: "
            <a href=svg_href download=format!("{file}.svg") data-download="svg">"SVG"</a>" · "
            <button type="button" data-png=format!("{file}.png")>"PNG"</button>" · Export: "
            <a href=format!("/api/comparisons/{slug}/export.csv") download=format!("{file}.csv")>"CSV"</a>" · "
            <a href=format!("/api/comparisons/{slug}/export.json") download=format!("{file}.json")>"JSON"</a>
        </p>
        <script inner_html=PNG_SCRIPT></script>
        <ComparisonTable c=c.clone()/>
        {diff}
    }
}

/// A table cell for a statistic, "n/a" (with the reason on hover) when the run lacks it.
fn cell(r: &RunView, m: MetricKind, s: Stat) -> impl IntoView + use<> {
    match stat_value(r, m, s) {
        Some(v) => view! { <td class="num">{f2(v)}</td> }.into_any(),
        None => {
            view! { <td class="num missing" title="not in the source or not measured">"n/a"</td> }.into_any()
        }
    }
}

/// " 37/100" beside a running run's status.
fn progress_of(r: &RunView) -> Option<impl IntoView + use<>> {
    let p = r.progress.as_ref().filter(|_| !r.status.is_terminal())?;
    let done = p.completed + p.failed;
    Some(view! { <span class="muted progress-count">{format!(" {done}/{}", p.total)}</span> })
}

/// Goodput and, on hover, the SLOs it counts against; "–" for a run that set none.
fn goodput_cell(r: &RunView) -> impl IntoView + use<> {
    let g = &r.spec.goodput;
    let slos: Vec<String> = [("TTFT", g.ttft_ms), ("TPOT", g.tpot_ms), ("E2EL", g.e2el_ms)]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k} <= {v} ms")))
        .collect();
    let said = if slos.is_empty() {
        "SLOs: as the source set them".to_string()
    } else {
        format!("SLOs: {}", slos.join(", "))
    };
    match r.summary.as_ref().and_then(|s| s.goodput) {
        Some(v) => view! { <td class="num goodput" title=said>{f2(v)}</td> }.into_any(),
        None if slos.is_empty() => {
            view! { <td class="num muted" title="no goodput SLO set">"–"</td> }.into_any()
        }
        None => {
            view! { <td class="num muted" title=format!("SLOs: {}; no result yet", slos.join(", "))>"–"</td> }
                .into_any()
        }
    }
}

#[component]
fn ComparisonTable(c: Arc<ComparisonView>) -> impl IntoView {
    let stats = [Stat::Mean, Stat::Median, Stat::P(99.0)];
    let metrics = [MetricKind::Ttft, MetricKind::Tpot, MetricKind::Itl, MetricKind::E2el];
    let rows = c
        .runs
        .iter()
        .map(|r| {
            let tput = r.summary.as_ref().map(|s| f2(s.output_throughput)).unwrap_or_else(|| "–".into());
            let goodput = goodput_cell(r);
            let engine =
                imported(r).map(|i| i.engine.clone()).unwrap_or_else(|| r.target_description.clone());
            let mark_badges =
                marks(r).into_iter().map(|m| view! { <span class="badge mark">{m}</span> }).collect_view();
            let cells = metrics
                .iter()
                .flat_map(|m| stats.iter().map(move |s| (*m, *s)))
                .map(|(m, s)| cell(r, m, s))
                .collect_view();
            view! {
                <tr data-run-id=r.id>
                    <td><a href=format!("/runs/{}", r.id)>{run_label(r)}</a>" "{mark_badges}</td>
                    <td>{engine}</td>
                    <td>{r.spec.load_label()}</td>
                    <td>{hardware(r)}</td>
                    <td><StatusBadge status=r.status/>{progress_of(r)}</td>
                    {cells}
                    <td class="num">{tput}</td>
                    {goodput}
                    {accepted_length_cell(r)}
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
        <table class="runs comparison">
            <thead>
                <tr>
                    <th rowspan="2">"Run"</th><th rowspan="2">"Engine"</th><th rowspan="2">"Load"</th><th rowspan="2">"Hardware"</th><th rowspan="2">"Status"</th>
                    <th colspan="3">"TTFT (ms)"</th><th colspan="3">"TPOT (ms)"</th>
                    <th colspan="3" title="gaps between streamed chunks, as vLLM reports it; with speculative decoding a chunk carries several tokens">"ITL (ms, chunk-level)"</th>
                    <th colspan="3">"E2EL (ms)"</th>
                    <th rowspan="2">"Output tok/s"</th>
                    <th rowspan="2" title="requests/s meeting every SLO the run set (its goodput fields); hover a number for the SLOs">"Goodput (req/s)"</th>
                    <th rowspan="2" title="EAGLE-3: tokens emitted per verify step over the measured part, the bonus token included (1.00 = no drafted token accepted), and the tree (steps/topk/draft tokens)">"Accepted length"</th>
                </tr>
                <tr>
                    <th>"mean"</th><th>"median"</th><th>"p99"</th>
                    <th>"mean"</th><th>"median"</th><th>"p99"</th>
                    <th>"mean"</th><th>"median"</th><th>"p99"</th>
                    <th>"mean"</th><th>"median"</th><th>"p99"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        </div>
    }
}
