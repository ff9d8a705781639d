use crate::components::run_charts::DistRow;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the run page's analysis section shows, computed on the server so the browser
/// never downloads every request's timings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunChartsData {
    pub rows: Vec<DistRow>,
    pub distribution_svg: String,
    pub timeline_svg: String,
}

/// The run's distributions and timeline for the view `query` (`metric=..&dist=..&from=..&to=..`);
/// `None` when the run has no per-request records.
#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_run_charts(id: i64, query: String) -> Result<Option<RunChartsData>, ServerFnError> {
    use crate::components::run_charts::{
        RunChart, RunChartView, distribution_rows, render, view::query_pairs,
    };
    let pairs = query_pairs(&query);
    let view = RunChartView::parse(|k| pairs.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone()))
        .map_err(|e| ServerFnError::new(e.to_string()))?;
    let records = super::store()?
        .run_requests(vec![id])
        .await
        .map_err(super::internal)?
        .into_iter()
        .next()
        .map(|(_, r)| r)
        .unwrap_or_default();
    if records.is_empty() {
        return Ok(None);
    }
    let svg = |chart| render(&records, chart, &view).map_err(ServerFnError::new);
    Ok(Some(RunChartsData {
        rows: distribution_rows(&records),
        distribution_svg: svg(RunChart::Distribution)?,
        timeline_svg: svg(RunChart::Timeline)?,
    }))
}
