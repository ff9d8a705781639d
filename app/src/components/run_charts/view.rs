//! What the run page's charts show, held in the URL so a permalink reproduces the view:
//! `?metric=tpot&dist=cdf&from=2&to=5`. A value that means nothing is refused with the
//! parameter named (the page answers 400, `chart.svg` too); other parameters are left to
//! the rest of the page. Printing is canonical (defaults left out).

use bench_types::{MetricKind, ValidationErrors};

/// How one metric's samples are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dist {
    #[default]
    Histogram,
    Cdf,
}

impl Dist {
    pub const ALL: [Dist; 2] = [Dist::Histogram, Dist::Cdf];
    pub fn key(self) -> &'static str {
        match self {
            Dist::Histogram => "histogram",
            Dist::Cdf => "cdf",
        }
    }
    pub fn title(self) -> &'static str {
        match self {
            Dist::Histogram => "Histogram",
            Dist::Cdf => "CDF",
        }
    }
}

/// Which of the run's charts `chart.svg` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunChart {
    #[default]
    Timeline,
    Distribution,
}

impl RunChart {
    pub const ALL: [RunChart; 2] = [RunChart::Timeline, RunChart::Distribution];
    pub fn key(self) -> &'static str {
        match self {
            RunChart::Timeline => "timeline",
            RunChart::Distribution => "distribution",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunChartView {
    pub metric: MetricKind,
    pub dist: Dist,
    /// The timeline's window, in seconds since the first dispatch; `None`: the run's edge.
    pub from: Option<f64>,
    pub to: Option<f64>,
}

impl Default for RunChartView {
    fn default() -> Self {
        RunChartView { metric: MetricKind::Ttft, dist: Dist::Histogram, from: None, to: None }
    }
}

/// The keys `RunChartView` reads, and `chart` for `chart.svg`.
pub const KEYS: [&str; 5] = ["metric", "dist", "from", "to", "chart"];

fn one_of(keys: impl Iterator<Item = &'static str>) -> String {
    keys.collect::<Vec<_>>().join(", ")
}

impl RunChartView {
    /// From query parameters (`get("metric")` etc.); every bad one is named.
    pub fn parse(get: impl Fn(&str) -> Option<String>) -> Result<RunChartView, ValidationErrors> {
        let d = RunChartView::default();
        let mut errs = ValidationErrors::default();
        let given = |k: &str| get(k).filter(|v| !v.is_empty());
        let metric = match given("metric") {
            None => d.metric,
            Some(m) => {
                bench_types::METRICS.iter().find(|i| i.key == m).map(|i| i.kind).unwrap_or_else(|| {
                    let keys = one_of(bench_types::METRICS.iter().map(|i| i.key));
                    errs.push("metric", format!("unknown metric {m:?}; one of {keys}"));
                    d.metric
                })
            }
        };
        let dist = match given("dist") {
            None => d.dist,
            Some(k) => Dist::ALL.into_iter().find(|c| c.key() == k).unwrap_or_else(|| {
                errs.push("dist", format!("unknown distribution chart {k:?}; one of histogram, cdf"));
                d.dist
            }),
        };
        let mut seconds = |name: &str| {
            let v = given(name)?;
            let s = v.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0);
            if s.is_none() {
                errs.push(name, format!("{v:?} is not a time in seconds (a number from 0 on)"));
            }
            s
        };
        let (from, to) = (seconds("from"), seconds("to"));
        if let (Some(f), Some(t)) = (from, to)
            && t <= f
        {
            errs.push("to", format!("to ({t}) must be after from ({f})"));
        }
        if errs.is_empty() { Ok(RunChartView { metric, dist, from, to }) } else { Err(errs) }
    }

    /// `parse`, plus `chart` (which chart) and no unknown parameter: what `chart.svg` accepts.
    pub fn parse_svg(pairs: &[(String, String)]) -> Result<(RunChart, RunChartView), ValidationErrors> {
        let get = |k: &str| pairs.iter().rev().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        let mut errs = match RunChartView::parse(get) {
            Ok(_) => ValidationErrors::default(),
            Err(e) => e,
        };
        let chart = match get("chart").filter(|c| !c.is_empty()) {
            None => RunChart::default(),
            Some(c) => RunChart::ALL.into_iter().find(|k| k.key() == c).unwrap_or_else(|| {
                errs.push("chart", format!("unknown chart {c:?}; one of timeline, distribution"));
                RunChart::default()
            }),
        };
        for (k, _) in pairs.iter().filter(|(k, _)| !KEYS.contains(&k.as_str())) {
            errs.push(k, format!("unknown parameter {k:?}; one of {}", KEYS.join(", ")));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok((chart, RunChartView::parse(get)?))
    }

    /// `metric=..&dist=..&from=..&to=..` without the defaults.
    pub fn to_query(&self) -> String {
        let mut q = Vec::new();
        if self.metric != MetricKind::Ttft {
            q.push(format!("metric={}", self.metric.info().key));
        }
        if self.dist != Dist::Histogram {
            q.push(format!("dist={}", self.dist.key()));
        }
        if let Some(f) = self.from {
            q.push(format!("from={f}"));
        }
        if let Some(t) = self.to {
            q.push(format!("to={t}"));
        }
        q.join("&")
    }

    /// "?..." for a link, "" for the default view (and "?" dropped).
    pub fn href(&self) -> String {
        let q = self.to_query();
        if q.is_empty() { "?".into() } else { format!("?{q}") }
    }
}

/// `a=1&b=2` as pairs; values here are keys and numbers, but `+` and `%XX` are decoded so
/// a hand-typed URL reads the same.
pub fn query_pairs(q: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            let hex =
                b.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
            match (b[i], hex) {
                (b'%', Some(h)) => {
                    out.push(h);
                    i += 3;
                }
                (c, _) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(q: &str) -> Result<RunChartView, ValidationErrors> {
        let pairs = query_pairs(q);
        RunChartView::parse(|k| pairs.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn a_view_round_trips_through_its_query() {
        let v = parse("metric=token_itl&dist=cdf&from=1.5&to=4").unwrap();
        assert_eq!(v.metric, MetricKind::TokenItl);
        assert_eq!((v.dist, v.from, v.to), (Dist::Cdf, Some(1.5), Some(4.0)));
        assert_eq!(parse(&v.to_query()).unwrap(), v);
        assert_eq!(parse("").unwrap().to_query(), "");
        assert_eq!(parse("metric=&from=").unwrap(), RunChartView::default(), "empty is the default");
    }

    #[test]
    fn bad_values_are_named() {
        for (q, field) in [
            ("metric=bogus", "metric"),
            ("dist=pie", "dist"),
            ("from=-1", "from"),
            ("to=soon", "to"),
            ("from=5&to=2", "to"),
        ] {
            let e = parse(q).unwrap_err();
            assert!(e.for_field(field).is_some(), "{q}: {e}");
        }
        let e = RunChartView::parse_svg(&query_pairs("chart=pie&zoom=2")).unwrap_err();
        assert!(e.for_field("chart").is_some() && e.for_field("zoom").is_some(), "{e}");
        let (c, v) = RunChartView::parse_svg(&query_pairs("chart=distribution&metric=e2el")).unwrap();
        assert_eq!((c, v.metric), (RunChart::Distribution, MetricKind::E2el));
    }
}
