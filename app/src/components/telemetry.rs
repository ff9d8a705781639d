//! Server telemetry: what the target (its Prometheus `/metrics`) and the worker's GPUs
//! (NVML) said about themselves while a run went, one chart per series on a time axis of
//! seconds since the measured start (the request timeline's axis), rendered to SVG on the
//! server so the page reads the same with JavaScript off. On a comparison, one chosen
//! series (`series=`) is overlaid across its runs.

use crate::components::ServerSvg;
use crate::server_fns::{TelemetryCharts, get_run_telemetry, get_telemetry_overlay};
use bench_types::telemetry::{RunTelemetry, Series, TelemetryPoint};
use charts::{LineChart, fmt_num, line_chart};
use leptos::prelude::*;

const X_DESC: &str = "seconds since the measured start";

/// One line: its points, each with hover text.
fn line(label: String, points: &[TelemetryPoint]) -> charts::Series {
    let tooltips =
        points.iter().map(|p| format!("{label}: {} at {} s", fmt_num(p.value), fmt_num(p.t_s))).collect();
    charts::Series {
        label,
        points: points.iter().map(|p| (p.t_s, p.value)).collect(),
        tooltips,
        missing: Vec::new(),
    }
}

fn chart(series: Series, lines: Vec<charts::Series>) -> Result<String, String> {
    line_chart(&LineChart {
        title: series.label().to_string(),
        x_desc: X_DESC.to_string(),
        y_desc: series.label().to_string(),
        series: lines,
        log_x: false,
        log_y: false,
        markers: true,
        x_int: false,
        empty: format!("no {} samples", series.label()),
    })
    .map_err(|e| e.to_string())
}

/// The points of one series split by GPU (the target's own series has one line).
fn by_gpu(points: &[TelemetryPoint]) -> Vec<(Option<u32>, Vec<TelemetryPoint>)> {
    let mut out: Vec<(Option<u32>, Vec<TelemetryPoint>)> = Vec::new();
    for p in points {
        match out.iter_mut().find(|(g, _)| *g == p.gpu) {
            Some((_, v)) => v.push(*p),
            None => out.push((p.gpu, vec![*p])),
        }
    }
    out
}

/// A run's charts: one per series it has, in `Series::ALL`'s order.
pub fn run_charts(t: &RunTelemetry) -> Result<Vec<(Series, String)>, String> {
    Series::ALL
        .into_iter()
        .filter_map(|s| {
            let points: Vec<TelemetryPoint> = t.points.iter().filter(|p| p.series == s).copied().collect();
            (!points.is_empty()).then_some((s, points))
        })
        .map(|(s, points)| {
            let lines = by_gpu(&points)
                .into_iter()
                .map(|(gpu, pts)| {
                    let label = gpu.map(|g| format!("GPU {g}")).unwrap_or_else(|| "target".into());
                    line(label, &pts)
                })
                .collect();
            Ok((s, chart(s, lines)?))
        })
        .collect()
}

/// One series across runs: a line per run (per run and GPU for GPU series).
pub fn overlay_chart(series: Series, runs: &[(String, Vec<TelemetryPoint>)]) -> Result<String, String> {
    let lines = runs
        .iter()
        .flat_map(|(label, points)| {
            let several = by_gpu(points).len() > 1;
            by_gpu(points).into_iter().map(move |(gpu, pts)| {
                let l = match gpu {
                    Some(g) if several => format!("{label} · GPU {g}"),
                    _ => label.clone(),
                };
                line(l, &pts)
            })
        })
        .collect();
    chart(series, lines)
}

/// The `series=` value of a comparison's URL: `None` when absent, an error naming it and
/// the choices when it is not a series.
pub fn parse_series(v: Option<String>) -> Result<Option<Series>, String> {
    match v.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(k) => Series::parse(&k).map(Some).ok_or_else(|| {
            let keys: Vec<&str> = Series::ALL.iter().map(|s| s.as_str()).collect();
            format!("series: unknown series {k:?}; one of {}", keys.join(", "))
        }),
    }
}

/// `TelemetryCharts` as the run page's resource holds it: the charts only as the HTML's
/// markup, not again in the hydration data (`ServerSvg` says why).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Shown {
    collected: bool,
    notes: Vec<String>,
    charts: Vec<(String, ServerSvg)>,
}

impl From<TelemetryCharts> for Shown {
    fn from(t: TelemetryCharts) -> Self {
        let charts = t.charts.into_iter().map(|(key, svg)| (key, svg.into())).collect();
        Self { collected: t.collected, notes: t.notes, charts }
    }
}

/// The run page's section.
#[component]
pub fn TelemetryPanel(id: i64) -> impl IntoView {
    let data = Resource::new(|| (), move |_| async move { get_run_telemetry(id).await.map(Shown::from) });
    let body = move || {
        data.get().map(|r| match r {
            Err(e) => {
                view! { <p class="error">{format!("Could not load the telemetry: {e}")}</p> }.into_any()
            }
            Ok(t) => view! { <TelemetryBody t/> }.into_any(),
        })
    };
    view! {
        <section class="telemetry" id="telemetry" data-testid="telemetry">
            <h2>"Server telemetry"</h2>
            <Suspense fallback=|| ()>{body}</Suspense>
        </section>
    }
}

#[component]
fn TelemetryBody(t: Shown) -> impl IntoView {
    let notes = t.notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view();
    let summary = match (t.collected, t.charts.is_empty()) {
        (false, _) => "Not sampled: this run predates server telemetry, or was imported.",
        (true, true) => "The worker sampled no series for this run.",
        (true, false) => {
            "Sampled by the worker about once a second: the target's /metrics and, for engines it started, the GPUs (NVML). Time 0 is the measured start, as on the request timeline."
        }
    };
    let charts = t
        .charts
        .into_iter()
        .map(
            |(key, svg)| view! { <div class="chart chart-telemetry" data-series=key inner_html=svg.0></div> },
        )
        .collect_view();
    view! {
        <p class="muted" data-testid="telemetry-summary">{summary}</p>
        <ul class="telemetry-notes muted" data-testid="telemetry-notes">{notes}</ul>
        {charts}
    }
}

/// A comparison's overlay of the series its URL names; nothing without `series=`.
#[component]
pub fn TelemetryOverlay(slug: String, series: Result<Option<Series>, String>) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let (Err(_), Some(resp)) = (&series, use_context::<leptos_axum::ResponseOptions>()) {
        resp.set_status(http::StatusCode::BAD_REQUEST);
    }
    let key = series.clone().ok().flatten();
    let data = Resource::new(
        move || key,
        move |k| {
            let slug = slug.clone();
            async move {
                match k {
                    Some(k) => get_telemetry_overlay(slug, k.as_str().to_string())
                        .await
                        .map(|svg| Some(ServerSvg(svg))),
                    None => Ok(None),
                }
            }
        },
    );
    let body = move || match &series {
        Err(e) => Some(
            view! { <p class="error chart-error" role="alert">"Bad chart parameter: "{e.clone()}</p> }
                .into_any(),
        ),
        Ok(None) => None,
        Ok(Some(_)) => data.get().map(|r| match r {
            Err(e) => {
                view! { <p class="error">{format!("Could not load the telemetry: {e}")}</p> }.into_any()
            }
            Ok(svg) => {
                view! { <div class="chart chart-telemetry" inner_html=svg.unwrap_or_default().0></div> }
                    .into_any()
            }
        }),
    };
    // Plain links, so the choice works with JavaScript off.
    let choices = Series::ALL
        .into_iter()
        .map(|s| {
            let current = (key == Some(s)).then_some("page");
            view! { <a href=format!("?series={}#telemetry-overlay", s.as_str()) aria-current=current>{s.label()}</a>" " }
        })
        .collect_view();
    view! {
        <section class="telemetry-overlay" id="telemetry-overlay" data-testid="telemetry-overlay">
            <details open=key.is_some()>
                <summary>"Server telemetry across the runs"</summary>
                <p class="chart-links">{choices}</p>
                <Suspense fallback=|| ()>{body}</Suspense>
            </details>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(series: Series, gpu: Option<u32>, t_s: f64, value: f64) -> TelemetryPoint {
        TelemetryPoint { series, gpu, t_s, value }
    }

    #[test]
    fn a_chart_per_series_present_with_a_line_per_gpu_and_hover_titles() {
        let t = RunTelemetry {
            collected: true,
            notes: vec![],
            points: vec![
                p(Series::RunningRequests, None, -0.5, 0.0),
                p(Series::RunningRequests, None, 0.5, 4.0),
                p(Series::GpuPowerW, Some(0), 0.5, 300.0),
                p(Series::GpuPowerW, Some(1), 0.5, 310.0),
            ],
        };
        let c = run_charts(&t).unwrap();
        assert_eq!(
            c.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            [Series::RunningRequests, Series::GpuPowerW]
        );
        assert!(c[0].1.contains("viewBox") && c[0].1.contains(X_DESC), "{}", c[0].1);
        assert!(c[0].1.contains("<title>target: 4 at 0.5 s</title>"), "{}", c[0].1);
        assert!(c[1].1.contains("GPU 1"), "{}", c[1].1);
    }

    #[test]
    fn the_series_parameter_is_named_when_bad() {
        assert_eq!(parse_series(None), Ok(None));
        assert_eq!(parse_series(Some("gpu_power_w".into())), Ok(Some(Series::GpuPowerW)));
        let e = parse_series(Some("vllm:num_requests_running".into())).unwrap_err();
        assert!(e.contains("\"vllm:num_requests_running\"") && e.contains("running_requests"), "{e}");
    }
}
