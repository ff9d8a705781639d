//! What the comparison page shows, held in the URL query string so that a permalink
//! reproduces exactly what was seen: `?chart=bars&metric=tpot&p=99&baseline=12&log=1`.
//! A value that means nothing (`metric=bogus`, `chart=pie`, a percentile no run carries)
//! is refused with the parameter named, rather than silently replaced by a default that
//! shows a chart nobody asked for; empty values (the plain form's "none") are the
//! defaults. Printing is canonical (defaults left out) so equal views give equal URLs.

use bench_types::{ComparisonView, MetricKind, ValidationErrors};

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
    /// A latency statistic against the throughput each run reached, one line per
    /// configuration in load order (rate and concurrency sweeps).
    Curve,
}

impl ChartKind {
    pub const ALL: [ChartKind; 5] =
        [ChartKind::Bars, ChartKind::Sweep, ChartKind::Curve, ChartKind::Ladder, ChartKind::Cdf];
    pub fn key(self) -> &'static str {
        match self {
            ChartKind::Bars => "bars",
            ChartKind::Sweep => "sweep",
            ChartKind::Ladder => "ladder",
            ChartKind::Cdf => "cdf",
            ChartKind::Curve => "curve",
        }
    }
    pub fn title(self) -> &'static str {
        match self {
            ChartKind::Bars => "Per run",
            ChartKind::Sweep => "Against concurrency",
            ChartKind::Ladder => "Optimization ladder",
            ChartKind::Cdf => "Latency CDF",
            ChartKind::Curve => "Latency against throughput",
        }
    }
}

/// The throughput on the x axis of the latency-throughput curve (`x=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CurveX {
    /// Output tokens per second.
    #[default]
    Tokens,
    /// Completed requests per second.
    Requests,
}

impl CurveX {
    pub const ALL: [CurveX; 2] = [CurveX::Tokens, CurveX::Requests];
    pub fn key(self) -> &'static str {
        match self {
            CurveX::Tokens => "tokens",
            CurveX::Requests => "requests",
        }
    }
    /// "output throughput": the x axis in a title.
    pub fn words(self) -> &'static str {
        match self {
            CurveX::Tokens => "output throughput",
            CurveX::Requests => "request throughput",
        }
    }
    pub fn unit(self) -> &'static str {
        match self {
            CurveX::Tokens => "tok/s",
            CurveX::Requests => "req/s",
        }
    }
    pub fn axis_title(self) -> String {
        format!("{} ({})", self.words(), self.unit())
    }
    /// The summary field it reads (an imported run may lack it).
    pub fn summary_key(self) -> &'static str {
        match self {
            CurveX::Tokens => "output_throughput",
            CurveX::Requests => "request_throughput",
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
    pub fn parse(s: &str) -> Option<Stat> {
        match s {
            "mean" => Some(Stat::Mean),
            "median" | "50" | "p50" => Some(Stat::Median),
            p => p
                .strip_prefix('p')
                .unwrap_or(p)
                .parse::<f64>()
                .ok()
                .filter(|p| *p > 0.0 && *p < 100.0)
                .map(Stat::P),
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
    /// The curve's throughput axis.
    pub x: CurveX,
}

impl Default for ChartView {
    fn default() -> Self {
        ChartView {
            kind: ChartKind::Bars,
            metric: MetricKind::Ttft,
            stat: Stat::Mean,
            baseline: None,
            other: None,
            log: false,
            x: CurveX::Tokens,
        }
    }
}

impl ChartView {
    /// From query parameters (`get("metric")` etc.); every bad one is named.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<ChartView, ValidationErrors> {
        let d = ChartView::default();
        let mut errs = ValidationErrors::default();
        let given = |k: &str| get(k).filter(|v| !v.is_empty());
        let keys = |it: &mut dyn Iterator<Item = &str>| it.collect::<Vec<_>>().join(", ");
        let kind = match given("chart") {
            None => d.kind,
            Some(k) => ChartKind::ALL.into_iter().find(|c| c.key() == k).unwrap_or_else(|| {
                errs.push(
                    "chart",
                    format!(
                        "unknown chart {k:?}; one of {}",
                        keys(&mut ChartKind::ALL.iter().map(|c| c.key()))
                    ),
                );
                d.kind
            }),
        };
        let metric = match given("metric") {
            None => d.metric,
            Some(m) => {
                bench_types::METRICS.iter().find(|i| i.key == m).map(|i| i.kind).unwrap_or_else(|| {
                    errs.push(
                        "metric",
                        format!(
                            "unknown metric {m:?}; one of {}",
                            keys(&mut bench_types::METRICS.iter().map(|i| i.key))
                        ),
                    );
                    d.metric
                })
            }
        };
        let stat = match given("p") {
            None => d.stat,
            Some(p) => Stat::parse(&p).unwrap_or_else(|| {
                errs.push(
                    "p",
                    format!(
                        "{p:?} is not a statistic; mean, median or a percentile between 0 and 100 (99, 99.9)"
                    ),
                );
                d.stat
            }),
        };
        let mut run = |name: &str| {
            given(name).and_then(|b| {
                let id = b.parse::<i64>().ok();
                if id.is_none() {
                    errs.push(name, format!("{b:?} is not a run id"));
                }
                id
            })
        };
        let (baseline, other) = (run("baseline"), run("other"));
        let log = match given("log").as_deref() {
            None | Some("0" | "false" | "off") => false,
            Some("1" | "true" | "on") => true,
            Some(l) => {
                errs.push("log", format!("{l:?} is not on or off; 1 or 0"));
                false
            }
        };
        let x = match given("x") {
            None => d.x,
            Some(x) => CurveX::ALL.into_iter().find(|c| c.key() == x).unwrap_or_else(|| {
                errs.push("x", format!("unknown throughput axis {x:?}; tokens or requests"));
                d.x
            }),
        };
        if errs.is_empty() {
            Ok(ChartView { kind, metric, stat, baseline, other, log, x })
        } else {
            Err(errs)
        }
    }

    /// What the view names must exist in `c`: the percentile in some run, the baseline and
    /// the other run among its runs.
    pub fn check(&self, c: &ComparisonView) -> Result<(), ValidationErrors> {
        let mut errs = ValidationErrors::default();
        if let Stat::P(p) = self.stat {
            let have = super::facts::percentiles(c);
            if !have.iter().any(|q| (q - p).abs() < 1e-9) {
                let list: Vec<String> = have.iter().map(|q| Stat::P(*q).label()).collect();
                errs.push(
                    "p",
                    format!(
                        "no run of this comparison has {}; choose mean, median or {}",
                        self.stat.label(),
                        list.join(", ")
                    ),
                );
            }
        }
        for (name, id) in [("baseline", self.baseline), ("other", self.other)] {
            if let Some(id) = id.filter(|id| !c.runs.iter().any(|r| r.id == *id)) {
                errs.push(name, format!("run {id} is not in this comparison"));
            }
        }
        if errs.is_empty() { Ok(()) } else { Err(errs) }
    }

    /// `parse`, then `check` against `c`: what the page and `chart.svg` accept.
    pub fn for_comparison(
        c: &ComparisonView,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<ChartView, ValidationErrors> {
        let v = ChartView::parse(get)?;
        v.check(c)?;
        Ok(v)
    }

    /// Whether the log-scale setting applies: bars start at 0 so that their lengths compare,
    /// which a log axis would break; lines (sweep, CDF) may use it.
    pub fn log_applies(&self) -> bool {
        matches!(self.kind, ChartKind::Sweep | ChartKind::Cdf | ChartKind::Curve)
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
        if self.x != d.x {
            parts.push(format!("x={}", self.x.key()));
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

    fn q(s: &str) -> Result<ChartView, ValidationErrors> {
        let pairs: Vec<(String, String)> = s
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').map(|(a, b)| (a.into(), b.into())).unwrap())
            .collect();
        ChartView::parse(|k| pairs.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone()))
    }

    fn fields(e: ValidationErrors) -> Vec<String> {
        e.0.into_iter().map(|f| f.field).collect()
    }

    #[test]
    fn round_trips_through_the_query_string() {
        let s = "chart=ladder&metric=tpot&p=99&baseline=12&log=1";
        let v = q(s).unwrap();
        assert_eq!(v.kind, ChartKind::Ladder);
        assert_eq!(v.metric, MetricKind::Tpot);
        assert_eq!(v.stat, Stat::P(99.0));
        assert_eq!(v.baseline, Some(12));
        assert!(v.log);
        assert_eq!(v.to_query(), s);
        assert_eq!(ChartView::default().to_query(), "");
        // The plain form sends every select, "none" as an empty value.
        assert_eq!(q("chart=bars&metric=ttft&p=mean&baseline=&other=").unwrap(), ChartView::default());
    }

    #[test]
    fn the_curve_view_round_trips_with_its_axis() {
        let s = "chart=curve&metric=tpot&p=99&log=1&x=requests";
        let v = q(s).unwrap();
        assert_eq!((v.kind, v.x), (ChartKind::Curve, CurveX::Requests));
        assert!(v.log_applies());
        assert_eq!(v.to_query(), s);
        assert_eq!(q("chart=curve&x=tokens").unwrap().to_query(), "chart=curve");
        assert_eq!(fields(q("x=watts").unwrap_err()), ["x"]);
    }

    #[test]
    fn nonsense_is_refused_with_the_parameter_named() {
        assert_eq!(fields(q("metric=bogus").unwrap_err()), ["metric"]);
        assert_eq!(fields(q("chart=pie").unwrap_err()), ["chart"]);
        assert_eq!(fields(q("p=200").unwrap_err()), ["p"]);
        assert_eq!(
            fields(q("metric=speed&p=200&chart=pie&baseline=x&log=maybe").unwrap_err()),
            ["chart", "metric", "p", "baseline", "log"]
        );
        let e = q("metric=bogus").unwrap_err().to_string();
        assert!(e.starts_with("metric: unknown metric \"bogus\"") && e.contains("ttft"), "{e}");
    }

    /// p=42 parses (a percentile) but no run carries it; a baseline must be one of the runs.
    #[test]
    fn the_view_must_name_what_the_comparison_has() {
        let mut c: ComparisonView = serde_json::from_value(serde_json::json!({
            "slug": "s", "title": "t", "view": {}, "created_at": "2025-01-01T00:00:00Z", "runs": []
        }))
        .unwrap();
        c.runs.clear();
        let v = q("p=42&baseline=7").unwrap();
        let e = v.check(&c).unwrap_err();
        assert_eq!(fields(e.clone()), ["p", "baseline"]);
        assert!(
            e.to_string().contains("no run of this comparison has p42; choose mean, median or p99"),
            "{e}"
        );
        assert!(q("p=99").unwrap().check(&c).is_ok());
    }
}
