//! A target's `/metrics` (the Prometheus text format) as flat samples, read by the
//! maintained `openmetrics-parser` crate. Telemetry (telemetry/metrics_text.rs) and the
//! speculation counters (spec_scrape.rs) both read the body through here, so there is one
//! parser, and it is not ours.

use openmetrics_parser::PrometheusValue;

/// What a family's `# TYPE` line says it is (histograms and summaries are left out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Untyped,
}

/// One sample line: the family's name as written (a counter keeps its `_total`), its
/// labels, and its value as written (possibly NaN or infinite: the caller decides).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub kind: Kind,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// The counter, gauge and untyped samples of a `/metrics` body; an error when the body is
/// not the text format (an HTML error page, a truncated body).
pub fn samples(text: &str) -> Result<Vec<Sample>, String> {
    // The format ends every line with a newline; a server that leaves the last one out
    // is still read.
    let owned;
    let text = if text.is_empty() || text.ends_with('\n') {
        text
    } else {
        owned = format!("{text}\n");
        &owned
    };
    let exposition = openmetrics_parser::prometheus::parse_prometheus(text)
        .map_err(|e| format!("not the Prometheus text format: {e}"))?;
    let mut out = Vec::new();
    for family in exposition.families.values() {
        for sample in family.iter_samples() {
            let (kind, value) = match &sample.value {
                PrometheusValue::Counter(c) => (Kind::Counter, c.value.as_f64()),
                PrometheusValue::Gauge(n) => (Kind::Gauge, n.as_f64()),
                PrometheusValue::Unknown(n) => (Kind::Untyped, n.as_f64()),
                PrometheusValue::Histogram(_) | PrometheusValue::Summary(_) => continue,
            };
            let labels = sample
                .get_labelset()
                .map(|set| set.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default();
            out.push(Sample { name: family.family_name.clone(), kind, labels, value });
        }
    }
    Ok(out)
}

/// `GET url` as text; an error says what came back instead.
pub async fn fetch(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let r = client.get(url).send().await.map_err(|e| format!("{url}: {e}"))?;
    if !r.status().is_success() {
        return Err(format!("{url} answered HTTP {}", r.status().as_u16()));
    }
    r.text().await.map_err(|e| format!("{url}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_gauges_and_untyped_samples_with_their_labels() {
        // The last line without its newline, too.
        let text = "u 7\n# HELP a_total A.\n# TYPE a_total counter\n\
                    a_total{position=\"1\",note=\"a } in \\\"quotes\\\"\"} 3 1700000000000\n\
                    # TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1.5\nh_count 2\n\
                    # TYPE g gauge\ng NaN";
        let mut s = samples(text).unwrap();
        s.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(s.len(), 3, "the histogram is left out: {s:?}");
        assert_eq!((s[0].name.as_str(), s[0].kind, s[0].value), ("a_total", Kind::Counter, 3.0));
        assert_eq!(s[0].label("position"), Some("1"));
        assert_eq!(s[0].label("note"), Some("a } in \"quotes\""));
        assert_eq!((s[1].name.as_str(), s[1].kind), ("g", Kind::Gauge));
        assert!(s[1].value.is_nan());
        assert_eq!((s[2].name.as_str(), s[2].kind, s[2].value), ("u", Kind::Untyped, 7.0));
    }

    #[test]
    fn other_bodies_are_errors() {
        for body in ["", "<html><body>502 Bad Gateway</body></html>", "# TYPE a counter\na abc\n"] {
            let e = samples(body).unwrap_err();
            assert!(e.starts_with("not the Prometheus text format"), "{body:?}: {e}");
        }
    }
}
