//! Writing the vLLM-compatible result file: `--save-result` (one JSON object, pretty) or
//! `--append-result` (one object per line, appended, as vLLM writes it), named as vLLM
//! names it, with `--metadata` pairs and the `--backend` name given.

use crate::cli::Args;
use bench::{BenchReport, vllm_result_json};
use bench_types::MetricKind;
use serde_json::{Value, json};
use std::io::Write;

/// Keys vLLM writes before `--metadata` is applied, which a metadata pair may replace; a
/// pair named like any later key loses to vLLM's own value.
const METADATA_MAY_REPLACE: [&str; 7] =
    ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts"];

/// The result object for one report, as the flags shape it.
pub fn result_json(args: &Args, r: &BenchReport, metrics: &[MetricKind]) -> anyhow::Result<Value> {
    let tokenizer_id =
        r.spec.tokenizer.clone().unwrap_or_else(|| "Qwen3 (assets/cache/qwen3/tokenizer.json)".into());
    let mut json = vllm_result_json(r, &tokenizer_id, metrics);
    let m = json.as_object_mut().expect("an object");
    m.insert("endpoint_type".into(), json!(args.backend_name()));
    m.insert("backend".into(), json!(args.backend_name()));
    if let Some(model) = &args.model {
        m.insert("model_id".into(), json!(model));
    }
    for (k, v) in args.metadata()? {
        if METADATA_MAY_REPLACE.contains(&k.as_str()) || !m.contains_key(&k) {
            m.insert(k, json!(v));
        }
    }
    if !args.save_detailed {
        // vLLM drops "fields with too many data points" unless --save-detailed.
        for k in ["input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors"] {
            m.remove(k);
        }
    }
    Ok(json)
}

/// Where the result of `r` goes: vLLM's name, or `--result-filename` (suffixed by the
/// concurrency in a sweep, except when appending: a sweep then fills one file).
pub fn result_path(args: &Args, r: &BenchReport) -> std::path::PathBuf {
    let spec = &r.spec;
    let conc = r.summary.max_concurrency;
    let name = match &args.result_filename {
        Some(f) if args.max_concurrency.len() > 1 && !args.append_result => match f.rsplit_once('.') {
            Some((stem, ext)) => format!("{stem}-concurrency{}.{ext}", conc.unwrap_or(0)),
            None => format!("{f}-concurrency{}", conc.unwrap_or(0)),
        },
        Some(f) => f.clone(),
        None => {
            let model = args.model.as_deref().unwrap_or(&spec.model);
            let label = args.label.as_deref().unwrap_or(args.backend_name());
            let conc = conc.map_or(String::new(), |c| format!("-concurrency{c}"));
            let rate = match &spec.ramp_up {
                Some(ramp) => {
                    format!("ramp-up-{}-{}qps-{}qps", ramp.strategy.as_str(), ramp.start_rps, ramp.end_rps)
                }
                None => format!("{}qps", spec.load.request_rate.map_or("inf".to_string(), |x| x.to_string())),
            };
            format!(
                "{label}-{rate}{conc}-{}-{}.json",
                model.rsplit('/').next().unwrap_or(model),
                r.started_at.format("%Y%m%d-%H%M%S")
            )
        }
    };
    match &args.result_dir {
        Some(d) => std::path::Path::new(d).join(name),
        None => std::path::PathBuf::from(name),
    }
}

pub fn save_result(args: &Args, r: &BenchReport, metrics: &[MetricKind]) -> anyhow::Result<()> {
    let json = result_json(args, r, metrics)?;
    let path = result_path(args, r);
    let fail = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", path.display());
    if args.append_result {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(fail)?;
        let len = f.metadata().map_err(fail)?.len();
        let sep = if len > 0 { "\n" } else { "" };
        write!(f, "{sep}{}", serde_json::to_string(&json)?).map_err(fail)?;
        eprintln!("appended to {}", path.display());
    } else {
        std::fs::write(&path, serde_json::to_string_pretty(&json)?).map_err(fail)?;
        eprintln!("saved {}", path.display());
    }
    Ok(())
}
