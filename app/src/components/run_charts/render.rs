//! A run's records and a view into SVG: the distribution chart (histogram or CDF of one
//! metric) and the request timeline. The page (through its server function) and the
//! server's `/runs/<id>/chart.svg` both call these, so a download is what was on screen.

use super::view::{Dist, RunChart, RunChartView};
use crate::components::charts::cdf::{cdf_points, samples};
use bench_types::{MetricKind, RequestRecord};
use charts::{Histogram, LineChart, Series};

/// Said instead of drawing axes for a run without per-request records.
pub const NO_RECORDS: &str =
    "No per-request records for this run (an imported run keeps only its summary): nothing to draw.";

/// The metric's short name, as the table and the chart title say it.
pub fn label(metric: MetricKind) -> &'static str {
    what(metric).0
}

fn what(metric: MetricKind) -> (&'static str, &'static str) {
    match metric {
        MetricKind::Itl => ("ITL by chunk", "gaps"),
        MetricKind::TokenItl => ("ITL by token", "gaps"),
        MetricKind::Ttft => ("TTFT", "requests"),
        MetricKind::Tpot => ("TPOT", "requests"),
        MetricKind::E2el => ("E2EL", "requests"),
    }
}

/// The histogram or CDF of `view.metric`.
pub fn distribution(records: &[RequestRecord], view: &RunChartView) -> Result<String, String> {
    let (name, noun) = what(view.metric);
    let title = format!("{name} {}", if view.dist == Dist::Cdf { "CDF" } else { "distribution" });
    if records.is_empty() {
        return charts::message_chart(&title, NO_RECORDS, charts::WIDTH, 260).map_err(|e| e.to_string());
    }
    let v = samples(records, view.metric);
    let empty = match view.metric {
        MetricKind::TokenItl => "No token-level ITL: no request knows how many tokens each chunk carried.",
        MetricKind::Tpot => "No TPOT: no successful request produced more than one token.",
        _ => "No successful request to measure.",
    };
    let svg = match view.dist {
        Dist::Histogram => charts::histogram(&Histogram {
            title,
            x_desc: format!("{name} (ms)"),
            noun: noun.into(),
            values: v,
            empty: empty.into(),
        }),
        Dist::Cdf => charts::line_chart(&LineChart {
            title,
            x_desc: format!("{name} (ms)"),
            y_desc: format!("fraction of {noun}"),
            series: vec![Series {
                label: format!("{name}, {} {noun}", v.len()),
                points: cdf_points(&v, 2000),
                tooltips: vec![],
                missing: vec![],
            }]
            .into_iter()
            .filter(|s| !s.points.is_empty())
            .collect(),
            log_x: false,
            log_y: false,
            markers: false,
            x_int: false,
            empty: empty.into(),
        }),
    };
    svg.map_err(|e| e.to_string())
}

/// The request timeline over the view's window.
pub fn timeline(records: &[RequestRecord], view: &RunChartView) -> Result<String, String> {
    if records.is_empty() {
        return charts::message_chart("Request timeline", NO_RECORDS, charts::WIDTH, 260)
            .map_err(|e| e.to_string());
    }
    charts::timeline(&super::timeline::timeline(records, view.from, view.to)).map_err(|e| e.to_string())
}

pub fn render(records: &[RequestRecord], chart: RunChart, view: &RunChartView) -> Result<String, String> {
    match chart {
        RunChart::Timeline => timeline(records, view),
        RunChart::Distribution => distribution(records, view),
    }
}
