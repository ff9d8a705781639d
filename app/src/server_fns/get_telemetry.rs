use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// A run's telemetry as the page shows it: charts rendered on the server (the browser
/// never downloads the samples), and what could not be sampled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TelemetryCharts {
    pub collected: bool,
    pub notes: Vec<String>,
    /// (series key, SVG), in the order the page shows them.
    pub charts: Vec<(String, String)>,
}

#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_run_telemetry(id: i64) -> Result<TelemetryCharts, ServerFnError> {
    let t = super::store()?.run_telemetry(id).await.map_err(super::internal)?;
    let charts = crate::components::telemetry::run_charts(&t).map_err(ServerFnError::new)?;
    Ok(TelemetryCharts {
        collected: t.collected,
        notes: t.notes,
        charts: charts.into_iter().map(|(s, svg)| (s.as_str().to_string(), svg)).collect(),
    })
}

/// One series (by key) across a comparison's runs, as SVG.
#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_telemetry_overlay(slug: String, series: String) -> Result<String, ServerFnError> {
    use bench_types::telemetry::Series;
    let series =
        Series::parse(&series).ok_or_else(|| ServerFnError::new(format!("unknown series {series:?}")))?;
    let store = super::store()?;
    let Some(c) = store.comparison(&slug).await.map_err(super::internal)? else {
        return Err(ServerFnError::new(format!("no comparison {slug:?}")));
    };
    let ids = c.runs.iter().map(|r| r.id).collect();
    let found = store.telemetry_series(ids, series).await.map_err(super::internal)?;
    let runs: Vec<(String, Vec<bench_types::telemetry::TelemetryPoint>)> = found
        .into_iter()
        .filter_map(|(id, points)| {
            let r = c.runs.iter().find(|r| r.id == id)?;
            Some((crate::components::charts::facts::chart_label(&c, r), points))
        })
        .collect();
    crate::components::telemetry::overlay_chart(series, &runs).map_err(ServerFnError::new)
}
