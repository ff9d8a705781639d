//! What the page must say about each run and about the set: imported or measured, random
//! weights, hardware, numbers the source lacked, and settings that make a comparison
//! unfair (different datasets or sampling). Pure, shared by the page and the chart.

use super::view_state::Stat;
use bench_types::imported::ImportedTarget;
use bench_types::{ComparisonView, MetricKind, RunView, Target};

pub fn imported(r: &RunView) -> Option<&ImportedTarget> {
    match &r.spec.target {
        Target::Imported(t) => Some(t),
        _ => None,
    }
}

/// "#12 SGLang FP8" — the label a person gave, else the target.
pub fn run_label(r: &RunView) -> String {
    let l = if r.spec.label.is_empty() { r.target_description.as_str() } else { r.spec.label.as_str() };
    format!("#{} {l}", r.id)
}

/// The label a chart shows for `r` in `c`: `run_label`, plus its load ("BS=4") when
/// another run of the set has the same label under another load (a sweep's runs share
/// one) and the label does not say it already.
pub fn chart_label(c: &ComparisonView, r: &RunView) -> String {
    let name = |r: &RunView| {
        if r.spec.label.is_empty() { r.target_description.clone() } else { r.spec.label.clone() }
    };
    let (mine, load) = (name(r), r.spec.load_label());
    let shared = c.runs.iter().any(|o| o.id != r.id && name(o) == mine && o.spec.load_label() != load);
    if shared && !mine.contains(&load) { format!("{} {load}", run_label(r)) } else { run_label(r) }
}

/// Where an imported run came from, without the folders of the server's file system:
/// "qwen3-8b-h100-latency.txt, line 79".
pub fn source_name(source: &str) -> String {
    let (path, rest) = source.split_once(", ").map_or((source, None), |(p, r)| (p, Some(r)));
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    match rest {
        Some(r) => format!("{file}, {r}"),
        None => file.to_string(),
    }
}

/// Hardware the numbers came from, when known.
pub fn hardware(r: &RunView) -> String {
    match &r.spec.target {
        Target::Imported(t) => t.hardware.clone().unwrap_or_else(|| "unknown (imported)".into()),
        Target::Native(n) => format!("this latlab host ({:?})", n.device).to_lowercase(),
        _ => "unknown (external server)".into(),
    }
}

pub fn random_weights(r: &RunView) -> bool {
    matches!(&r.spec.target, Target::Native(n) if n.model_source.starts_with("random:"))
}

/// Short marks shown beside a run everywhere it appears.
pub fn marks(r: &RunView) -> Vec<&'static str> {
    let mut m = Vec::new();
    if imported(r).is_some() {
        m.push("imported");
    }
    if random_weights(r) {
        m.push("random weights");
    }
    m
}

/// The number a chart shows for a run, or `None` when the run has no result or the source
/// lacked it (never a stored default of 0).
pub fn stat_value(r: &RunView, metric: MetricKind, stat: Stat) -> Option<f64> {
    // No completed request, no latency: the summary's zeros are placeholders.
    let s = r.summary.as_ref().filter(|s| s.completed > 0)?;
    let key = metric.info().key;
    let lacks = |k: &str| imported(r).is_some_and(|t| t.lacks(k));
    if lacks(key) {
        return None;
    }
    let st = metric.stats(s)?;
    match stat {
        Stat::Mean if !lacks(&format!("{key}.mean")) => Some(st.mean_ms),
        Stat::Median if !lacks(&format!("{key}.median")) => Some(st.median_ms),
        Stat::P(p) => st.percentile(p),
        _ => None,
    }
}

/// Percentiles any run of the comparison carries (for the percentile picker).
pub fn percentiles(c: &ComparisonView) -> Vec<f64> {
    let mut ps: Vec<f64> = c
        .runs
        .iter()
        .filter_map(|r| r.summary.as_ref())
        .flat_map(|s| s.ttft.percentiles.iter().chain(&s.tpot.percentiles).map(|(p, _)| *p))
        .collect();
    ps.sort_by(f64::total_cmp);
    ps.dedup();
    if ps.is_empty() {
        ps.push(99.0);
    }
    ps
}

/// Warnings about the set as a whole, in words a reader acts on.
pub fn warnings(c: &ComparisonView) -> Vec<String> {
    let mut w = Vec::new();
    let distinct = |f: &dyn Fn(&RunView) -> String| {
        let mut v: Vec<String> = c.runs.iter().map(f).collect();
        v.sort();
        v.dedup();
        v
    };
    let datasets = distinct(&|r| {
        format!(
            "{} ({} prompts)",
            serde_json::to_string(&r.spec.dataset).unwrap_or_default(),
            r.spec.num_prompts
        )
    });
    if datasets.len() > 1 {
        w.push(format!("These runs used {} different datasets or prompt counts: their latencies are not directly comparable.", datasets.len()));
    }
    let sampling = distinct(&|r| serde_json::to_string(&r.spec.sampling).unwrap_or_default());
    if sampling.len() > 1 {
        w.push("These runs used different sampling settings (temperature, ignore_eos or extra body): output lengths and latencies may differ for that reason alone.".into());
    }
    let hw = distinct(&hardware);
    if hw.len() > 1 {
        w.push(format!("Runs come from different hardware: {}.", hw.join("; ")));
    }
    if c.runs.iter().any(random_weights) {
        w.push("Some runs use random weights: their outputs are not real text, so output lengths (and speculative decoding) do not behave like the real model's.".into());
    }
    let n_imported = c.runs.iter().filter(|r| imported(r).is_some()).count();
    if n_imported > 0 && n_imported < c.runs.len() {
        w.push("Imported results sit beside runs latlab measured: they were measured elsewhere, by another client.".into());
    }
    w
}
