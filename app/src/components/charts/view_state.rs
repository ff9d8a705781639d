//! What the comparison page shows, held in the URL query string so that a permalink
//! reproduces exactly what was seen: `?chart=bars&metric=tpot&p=99&baseline=12&log=1`.
//! Parsing is forgiving (an unknown value falls back to the default) because links get
//! hand-edited; printing is canonical (defaults left out) so equal views give equal URLs.

use bench_types::MetricKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartKind {
    /// Per-run bars of one statistic of one metric.
    Bars,
    /// Metric against max concurrency, one line per configuration (sweeps).
    Sweep,
    /// Each optimization step against the previous one.
    Ladder,
    /// Latency CDF per run (needs per-request records).
    Cdf,
}

impl ChartKind {
    pub const ALL: [ChartKind; 4] = [ChartKind::Bars, ChartKind::Sweep, ChartKind::Ladder, ChartKind::Cdf];
    pub fn key(self) -> &'static str {
        match self {
            ChartKind::Bars => "bars",
            ChartKind::Sweep => "sweep",
            ChartKind::Ladder => "ladder",
            ChartKind::Cdf => "cdf",
        }
    }
    pub fn title(self) -> &'static str {
        match self {
            ChartKind::Bars => "Per run",
            ChartKind::Sweep => "Against concurrency",
            ChartKind::Ladder => "Optimization ladder",
            ChartKind::Cdf => "Latency CDF",
        }
    }
}

/// Which number of a metric's `Stats`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    Mean,
    Median,
    P(f64),
}

impl Stat {
    pub fn key(self) -> String {
        match self {
            Stat::Mean => "mean".into(),
            Stat::Median => "median".into(),
            Stat::P(p) => bench_types::result_block::percentile_label(p),
        }
    }
    pub fn label(self) -> String {
        match self {
            Stat::Mean => "mean".into(),
            Stat::Median => "median".into(),
            Stat::P(p) => format!("p{}", bench_types::result_block::percentile_label(p)),
        }
    }
    fn parse(s: &str) -> Option<Stat> {
        match s {
            "mean" => Some(Stat::Mean),
            "median" | "50" => Some(Stat::Median),
            p => p.trim_start_matches('p').parse::<f64>().ok().filter(|p| *p > 0.0 && *p < 100.0).map(Stat::P),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChartView {
    pub kind: ChartKind,
    pub metric: MetricKind,
    pub stat: Stat,
    /// Run id every bar is compared with; also one side of the configuration diff.
    pub baseline: Option<i64>,
    /// The other side of the configuration diff.
    pub other: Option<i64>,
    pub log: bool,
}

impl Default for ChartView {
    fn default() -> Self {
        ChartView { kind: ChartKind::Bars, metric: MetricKind::Ttft, stat: Stat::Mean, baseline: None, other: None, log: false }
    }
}

impl ChartView {
    /// From query parameters (`get("metric")` etc.).
    pub fn from_query(get: impl Fn(&str) -> Option<String>) -> ChartView {
        let d = ChartView::default();
        let metric = get("metric")
            .and_then(|m| bench_types::METRICS.iter().find(|i| i.key == m).map(|i| i.kind))
            .unwrap_or(d.metric);
        ChartView {
            kind: get("chart").and_then(|k| ChartKind::ALL.into_iter().find(|c| c.key() == k)).unwrap_or(d.kind),
            metric,
            stat: get("p").and_then(|p| Stat::parse(&p)).unwrap_or(d.stat),
            baseline: get("baseline").and_then(|b| b.parse().ok()),
            other: get("other").and_then(|b| b.parse().ok()),
            log: get("log").is_some_and(|l| l == "1" || l == "true" || l == "on"),
        }
    }

    /// Canonical query string without the leading '?' (empty for the default view).
    pub fn to_query(&self) -> String {
        let d = ChartView::default();
        let mut parts = Vec::new();
        if self.kind != d.kind {
            parts.push(format!("chart={}", self.kind.key()));
        }
        if self.metric != d.metric {
            parts.push(format!("metric={}", self.metric.info().key));
        }
        if self.stat != d.stat {
            parts.push(format!("p={}", self.stat.key()));
        }
        if let Some(b) = self.baseline {
            parts.push(format!("baseline={b}"));
        }
        if let Some(o) = self.other {
            parts.push(format!("other={o}"));
        }
        if self.log {
            parts.push("log=1".into());
        }
        parts.join("&")
    }

    /// "TTFT p99 (ms)".
    pub fn axis_title(&self) -> String {
        let short = match self.metric {
            MetricKind::TokenItl => "token-level ITL".to_string(),
            MetricKind::Itl => "ITL (chunk-level)".to_string(),
            m => m.info().key.to_uppercase(),
        };
        format!("{short} {} ({})", self.stat.label(), self.metric.info().unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> ChartView {
        let pairs: Vec<(String, String)> =
            s.split('&').filter(|p| !p.is_empty()).map(|p| p.split_once('=').map(|(a, b)| (a.into(), b.into())).unwrap()).collect();
        ChartView::from_query(|k| pairs.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone()))
    }

    #[test]
    fn round_trips_through_the_query_string() {
        let s = "chart=ladder&metric=tpot&p=99&baseline=12&log=1";
        let v = q(s);
        assert_eq!(v.kind, ChartKind::Ladder);
        assert_eq!(v.metric, MetricKind::Tpot);
        assert_eq!(v.stat, Stat::P(99.0));
        assert_eq!(v.baseline, Some(12));
        assert!(v.log);
        assert_eq!(v.to_query(), s);
        assert_eq!(ChartView::default().to_query(), "");
    }

    #[test]
    fn nonsense_falls_back_to_defaults() {
        let v = q("metric=speed&p=200&chart=pie&baseline=x");
        assert_eq!(v, ChartView::default());
    }
}
