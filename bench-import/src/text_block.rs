//! vLLM's printed "Serving Benchmark Result" block (the layout `bench_types::result_block`
//! writes) back into a `Summary`. Strict: every line inside a block must be one vLLM
//! prints, so a mangled paste fails with the line named instead of importing half of it.

use crate::{ImportError, Parsed};
use bench_types::{Stats, Summary};

/// Metric sections a block can carry: the short name vLLM prints, latlab's key.
const METRICS: [(&str, &str); 5] =
    [("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl"), ("E2EL", "e2el"), ("token ITL", "token_itl")];

/// Is `line` the block's opening title (`===== Serving Benchmark Result =====`)?
pub fn is_block_start(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('=') && t.trim_matches('=').trim() == "Serving Benchmark Result"
}

fn is_block_end(line: &str) -> bool {
    let t = line.trim();
    t.len() >= 10 && t.chars().all(|c| c == '=')
}

fn is_section_title(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("---") && t.ends_with("---")
}

/// Every block in `text`, each with the (1-based) line its title is on. A text without
/// any block is an error, as is a block without its closing line.
pub fn parse_blocks(text: &str) -> Result<Vec<(usize, Parsed)>, ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !is_block_start(lines[i]) {
            i += 1;
            continue;
        }
        let (parsed, end) = parse_block_at(&lines, i)?;
        out.push((i + 1, parsed));
        i = end + 1;
    }
    if out.is_empty() {
        return Err(ImportError::new(
            "no \"Serving Benchmark Result\" block found (its title line starts with '=')",
        ));
    }
    Ok(out)
}

/// The block whose title is `lines[start]`: its result and the index of its closing line.
pub fn parse_block_at(lines: &[&str], start: usize) -> Result<(Parsed, usize), ImportError> {
    let end = (start + 1..lines.len()).find(|&j| is_block_end(lines[j])).ok_or_else(|| {
        ImportError::at(start + 1, "this \"Serving Benchmark Result\" block has no closing '=====' line")
    })?;
    Ok((parse_body(&lines[start + 1..end], start + 2)?, end))
}

/// Accumulates one block's values so that duplicates and omissions can be reported.
#[derive(Default)]
struct Fields {
    top: Vec<(&'static str, f64)>,
    /// (metric key, "mean" | "median" | percentile) -> value
    metric: Vec<(&'static str, MetricField, f64)>,
}

#[derive(Clone, Copy, PartialEq)]
enum MetricField {
    Mean,
    Median,
    P(f64),
}

const TOP: [(&str, &str); 13] = [
    ("Successful requests", "completed"),
    ("Failed requests", "failed"),
    ("Maximum request concurrency", "max_concurrency"),
    ("Request rate configured (RPS)", "request_rate"),
    ("Benchmark duration (s)", "duration_s"),
    ("Total input tokens", "total_input_tokens"),
    ("Total generated tokens", "total_output_tokens"),
    ("Request throughput (req/s)", "request_throughput"),
    ("Request goodput (req/s)", "goodput"),
    ("Output token throughput (tok/s)", "output_throughput"),
    ("Peak output token throughput (tok/s)", "peak_output_throughput"),
    ("Peak concurrent requests", "peak_concurrent_requests"),
    ("Total Token throughput (tok/s)", "total_token_throughput"),
];

/// Fields without which a block is not a result.
const REQUIRED: [&str; 7] = [
    "completed",
    "duration_s",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
];

fn parse_metric_label(label: &str) -> Option<(&'static str, MetricField)> {
    let inner = label.strip_suffix(" (ms)")?;
    let (head, short) = inner.split_once(' ')?;
    let key = METRICS.iter().find(|(s, _)| *s == short)?.1;
    let field = match head {
        "Mean" => MetricField::Mean,
        "Median" => MetricField::Median,
        p => MetricField::P(p.strip_prefix('P')?.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p))?),
    };
    Some((key, field))
}

fn parse_body(lines: &[&str], first_line_no: usize) -> Result<Parsed, ImportError> {
    let mut f = Fields::default();
    for (k, raw) in lines.iter().enumerate() {
        let no = first_line_no + k;
        let line = raw.trim();
        if line.is_empty() || is_section_title(line) {
            continue;
        }
        let (label, value) = line
            .split_once(':')
            .ok_or_else(|| ImportError::at(no, format!("expected \"<label>: <number>\", found {line:?}")))?;
        let (label, value) = (label.trim(), value.trim());
        let num: f64 =
            value.parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0).ok_or_else(|| {
                ImportError::at(no, format!("{label}: {value:?} is not a non-negative number"))
            })?;
        if let Some((_, key)) = TOP.iter().find(|(l, _)| *l == label) {
            if f.top.iter().any(|(k, _)| k == key) {
                return Err(ImportError::at(no, format!("{label} appears twice")));
            }
            f.top.push((key, num));
        } else if let Some((key, field)) = parse_metric_label(label) {
            if f.metric.iter().any(|(k, fl, _)| *k == key && *fl == field) {
                return Err(ImportError::at(no, format!("{label} appears twice")));
            }
            f.metric.push((key, field, num));
        } else {
            return Err(ImportError::at(
                no,
                format!("unknown line in a Serving Benchmark Result block: {line:?}"),
            ));
        }
    }
    build(f, first_line_no)
}

/// A count: whole, and small enough for the u32 latlab stores counts in.
fn whole(key: &str, v: f64, line: usize) -> Result<u64, ImportError> {
    if v.fract() != 0.0 {
        return Err(ImportError::at(line, format!("{key} must be a whole number, found {v}")));
    }
    if v > u32::MAX as f64 {
        return Err(ImportError::at(line, format!("{key} is too large: {v}")));
    }
    Ok(v as u64)
}

fn build(f: Fields, line: usize) -> Result<Parsed, ImportError> {
    let get = |k: &str| f.top.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
    let missing_required: Vec<&str> = REQUIRED.iter().copied().filter(|k| get(k).is_none()).collect();
    if !missing_required.is_empty() {
        return Err(ImportError::at(line, format!("the block lacks {}", missing_required.join(", "))));
    }
    let req = |k: &str| get(k).unwrap_or_default();
    let mut missing = Vec::new();
    let mut s = Summary {
        completed: whole("completed", req("completed"), line)? as u32,
        failed: get("failed").map(|v| whole("failed", v, line)).transpose()?.unwrap_or(0) as u32,
        max_concurrency: get("max_concurrency")
            .map(|v| whole("max_concurrency", v, line))
            .transpose()?
            .map(|v| v as u32),
        request_rate: get("request_rate"),
        duration_s: req("duration_s"),
        total_input_tokens: whole("total_input_tokens", req("total_input_tokens"), line)?,
        total_output_tokens: whole("total_output_tokens", req("total_output_tokens"), line)?,
        request_throughput: req("request_throughput"),
        goodput: get("goodput"),
        output_throughput: req("output_throughput"),
        total_token_throughput: req("total_token_throughput"),
        ..Summary::default()
    };
    match get("peak_output_throughput") {
        Some(v) => s.peak_output_throughput = v,
        None => missing.push("peak_output_throughput".to_string()),
    }
    match get("peak_concurrent_requests") {
        Some(v) => s.peak_concurrent_requests = whole("peak_concurrent_requests", v, line)? as u32,
        None => missing.push("peak_concurrent_requests".to_string()),
    }
    for (_, key) in METRICS {
        let fields: Vec<(MetricField, f64)> =
            f.metric.iter().filter(|(k, _, _)| *k == key).map(|(_, fl, v)| (*fl, *v)).collect();
        if fields.is_empty() {
            missing.push(key.to_string());
            continue;
        }
        let mut st = Stats::default();
        let mean = fields.iter().find(|(fl, _)| *fl == MetricField::Mean).map(|(_, v)| *v);
        let median = fields.iter().find(|(fl, _)| *fl == MetricField::Median).map(|(_, v)| *v);
        match mean {
            Some(v) => st.mean_ms = v,
            None => missing.push(format!("{key}.mean")),
        }
        match median {
            Some(v) => st.median_ms = v,
            None => missing.push(format!("{key}.median")),
        }
        // The printed block never carries the standard deviation.
        missing.push(format!("{key}.std"));
        st.percentiles = fields
            .iter()
            .filter_map(|(fl, v)| if let MetricField::P(p) = fl { Some((*p, *v)) } else { None })
            .collect();
        st.percentiles.sort_by(|a, b| a.0.total_cmp(&b.0));
        match key {
            "ttft" => s.ttft = st,
            "tpot" => s.tpot = st,
            "itl" => s.itl = st,
            "e2el" => s.e2el = st,
            _ => s.token_itl = Some(st),
        }
    }
    // Printed blocks carry no per-request records.
    missing.push("requests".to_string());
    Ok(Parsed { summary: s, missing, requests: Vec::new(), model: None, num_prompts: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full printed vLLM result block (TTFT, TPOT, ITL, the peak lines).
    const BLOCK: &str = include_str!("../../data/fixtures/vllm_serving_result.txt");

    #[test]
    fn parses_a_block_and_prints_it_back_identically() {
        let blocks = parse_blocks(BLOCK).unwrap();
        assert_eq!(blocks.len(), 1);
        let p = &blocks[0].1;
        assert_eq!(p.summary.max_concurrency, Some(4));
        assert_eq!(p.summary.ttft.percentile(99.0), Some(98.59));
        assert!(p.missing.contains(&"e2el".to_string()));
        assert!(p.missing.contains(&"ttft.std".to_string()));
        let metrics =
            [bench_types::MetricKind::Ttft, bench_types::MetricKind::Tpot, bench_types::MetricKind::Itl];
        assert_eq!(bench_types::result_block::serving_result(&p.summary, &metrics), BLOCK);
    }

    #[test]
    fn a_mangled_line_is_named() {
        let bad = BLOCK.replace("Median TPOT (ms):                        7.40", "Median TPOT (ms):   seven");
        let e = parse_blocks(&bad).unwrap_err().to_string();
        assert!(e.contains("line 18") && e.contains("Median TPOT (ms)"), "{e}");
    }

    #[test]
    fn missing_required_fields_unknown_lines_and_no_end_are_errors() {
        let no_duration = BLOCK.replace("Benchmark duration (s):                  44.40\n", "");
        assert!(parse_blocks(&no_duration).unwrap_err().to_string().contains("duration_s"));
        let unknown = BLOCK.replace("Total input tokens:", "Total bananas:");
        assert!(parse_blocks(&unknown).unwrap_err().to_string().contains("unknown line"));
        let cut = BLOCK.replace("==================================================\n", "");
        assert!(parse_blocks(&cut).unwrap_err().to_string().contains("no closing"));
        assert!(parse_blocks("hello").unwrap_err().to_string().contains("no \"Serving Benchmark Result\""));
    }
}
