//! `vllm bench serve --save-result` JSON into a `Summary` (and per-request records when
//! the file carries `ttfts` / `itls`). Keys follow vLLM v0.11's `serve.py`.

use crate::{ImportError, Parsed};
use bench_types::{RequestRecord, Stats, Summary};
use serde_json::{Map, Value};

const METRICS: [&str; 4] = ["ttft", "tpot", "itl", "e2el"];

fn num(o: &Map<String, Value>, k: &str) -> Result<Option<f64>, ImportError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(Some)
            .ok_or_else(|| ImportError::new(format!("\"{k}\" must be a non-negative number"))),
        Some(other) => Err(ImportError::new(format!("\"{k}\" must be a number, found {other}"))),
    }
}

fn required(o: &Map<String, Value>, k: &str) -> Result<f64, ImportError> {
    num(o, k)?.ok_or_else(|| ImportError::new(format!("the vLLM result lacks \"{k}\"")))
}

/// A count: a whole number that fits the u32 latlab stores counts in (a larger one would
/// wrap to a wrong number, not fail).
fn whole(o: &Map<String, Value>, k: &str) -> Result<Option<u64>, ImportError> {
    match num(o, k)? {
        Some(v) if v.fract() != 0.0 => {
            Err(ImportError::new(format!("\"{k}\" must be a whole number, found {v}")))
        }
        Some(v) if v > u32::MAX as f64 => Err(ImportError::new(format!("\"{k}\" is too large: {v}"))),
        v => Ok(v.map(|v| v as u64)),
    }
}

/// Parses the text of a `--save-result` file.
pub fn parse_str(text: &str) -> Result<Parsed, ImportError> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| ImportError::at(e.line(), format!("not valid JSON: {e}")))?;
    parse(&v)
}

pub fn parse(v: &Value) -> Result<Parsed, ImportError> {
    let o = v.as_object().ok_or_else(|| ImportError::new("a vLLM result must be a JSON object"))?;
    let mut missing = Vec::new();
    let mut s = Summary {
        completed: whole(o, "completed")?
            .ok_or_else(|| ImportError::new("the vLLM result lacks \"completed\""))?
            as u32,
        failed: whole(o, "failed")?.unwrap_or(0) as u32,
        max_concurrency: whole(o, "max_concurrency")?.map(|v| v as u32),
        // vLLM writes "inf" (a string) for an unlimited rate.
        request_rate: num(o, "request_rate").ok().flatten(),
        duration_s: required(o, "duration")?,
        total_input_tokens: whole(o, "total_input_tokens")?
            .ok_or_else(|| ImportError::new("the vLLM result lacks \"total_input_tokens\""))?,
        total_output_tokens: whole(o, "total_output_tokens")?
            .ok_or_else(|| ImportError::new("the vLLM result lacks \"total_output_tokens\""))?,
        request_throughput: required(o, "request_throughput")?,
        goodput: num(o, "request_goodput")?,
        output_throughput: required(o, "output_throughput")?,
        total_token_throughput: required(o, "total_token_throughput")?,
        ..Summary::default()
    };
    match num(o, "max_output_tokens_per_s")? {
        Some(v) => s.peak_output_throughput = v,
        None => missing.push("peak_output_throughput".into()),
    }
    match num(o, "max_concurrent_requests")? {
        Some(v) => s.peak_concurrent_requests = v.round() as u32,
        None => missing.push("peak_concurrent_requests".into()),
    }
    for key in METRICS {
        let Some(mean) = num(o, &format!("mean_{key}_ms"))? else {
            missing.push(key.to_string());
            continue;
        };
        let mut st = Stats { mean_ms: mean, ..Stats::default() };
        match num(o, &format!("median_{key}_ms"))? {
            Some(v) => st.median_ms = v,
            None => missing.push(format!("{key}.median")),
        }
        match num(o, &format!("std_{key}_ms"))? {
            Some(v) => st.std_ms = v,
            None => missing.push(format!("{key}.std")),
        }
        let suffix = format!("_{key}_ms");
        for (k, _) in o.iter() {
            let Some(p) = k.strip_prefix('p').and_then(|r| r.strip_suffix(&suffix)) else { continue };
            // vLLM writes p99.9 as "p99.9"; anything else that is not a percentile (NaN,
            // inf, 1e3 parse as numbers) is ignored.
            let p = p.parse::<f64>().ok().filter(|p| *p > 0.0 && *p <= 100.0);
            if let (Some(p), Some(v)) = (p, num(o, k)?) {
                st.percentiles.push((p, v));
            }
        }
        st.percentiles.sort_by(|a, b| a.0.total_cmp(&b.0));
        match key {
            "ttft" => s.ttft = st,
            "tpot" => s.tpot = st,
            "itl" => s.itl = st,
            _ => s.e2el = st,
        }
    }
    // latlab's token-level ITL has no vLLM counterpart.
    missing.push("token_itl".into());
    let requests = records(o)?;
    if requests.is_empty() {
        missing.push("requests".into());
    } else {
        // vLLM does not save when each request was dispatched.
        missing.push("requests.dispatch_offset".into());
    }
    let model = o.get("model_id").and_then(Value::as_str).map(str::to_string);
    let num_prompts = whole(o, "num_prompts")?.map(|v| v as u32);
    Ok(Parsed { summary: s, missing, requests, model, num_prompts })
}

fn f64_list(v: &Value, what: &str) -> Result<Vec<f64>, ImportError> {
    let a = v.as_array().ok_or_else(|| ImportError::new(format!("\"{what}\" must be a list")))?;
    a.iter()
        .map(|x| {
            x.as_f64().ok_or_else(|| ImportError::new(format!("\"{what}\" must hold numbers, found {x}")))
        })
        .collect()
}

/// Per-request records from `input_lens`, `output_lens`, `ttfts`, `itls` (seconds) and
/// `errors`, when all four lists are present; E2EL is TTFT plus the gaps, as vLLM computes
/// latency from the same chunk times.
fn records(o: &Map<String, Value>) -> Result<Vec<RequestRecord>, ImportError> {
    let (Some(ins), Some(outs), Some(ttfts), Some(itls)) =
        (o.get("input_lens"), o.get("output_lens"), o.get("ttfts"), o.get("itls"))
    else {
        return Ok(Vec::new());
    };
    let ins = f64_list(ins, "input_lens")?;
    let outs = f64_list(outs, "output_lens")?;
    let ttfts = f64_list(ttfts, "ttfts")?;
    let itls = itls.as_array().ok_or_else(|| ImportError::new("\"itls\" must be a list of lists"))?;
    let n = ins.len();
    if outs.len() != n || ttfts.len() != n || itls.len() != n {
        return Err(ImportError::new(format!(
            "per-request lists differ in length (input_lens {n}, output_lens {}, ttfts {}, itls {})",
            outs.len(),
            ttfts.len(),
            itls.len()
        )));
    }
    let errors: Vec<String> = match o.get("errors").and_then(Value::as_array) {
        Some(a) => a.iter().map(|e| e.as_str().unwrap_or_default().to_string()).collect(),
        None => vec![String::new(); n],
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let gaps = f64_list(&itls[i], &format!("itls[{i}]"))?;
        let error = errors.get(i).filter(|e| !e.is_empty()).cloned();
        let success = error.is_none() && ttfts[i] > 0.0;
        let mut offsets = Vec::with_capacity(gaps.len() + 1);
        if success {
            let mut t = ttfts[i];
            offsets.push(t);
            for g in &gaps {
                t += g;
                offsets.push(t);
            }
        }
        out.push(RequestRecord {
            index: i as u32,
            dispatch_offset_s: 0.0,
            success,
            error,
            input_tokens: ins[i] as u32,
            output_tokens: outs[i] as u32,
            ttft_s: success.then_some(ttfts[i]),
            e2el_s: offsets.last().copied(),
            chunk_offsets_s: offsets,
            chunk_tokens: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Value {
        serde_json::json!({
            "backend": "openai-chat", "model_id": "Qwen/Qwen3-8B", "num_prompts": 2, "request_rate": "inf",
            "max_concurrency": 2, "duration": 1.5, "completed": 2, "total_input_tokens": 20,
            "total_output_tokens": 6, "request_throughput": 1.33, "request_goodput": null,
            "output_throughput": 4.0, "total_token_throughput": 17.33, "max_output_tokens_per_s": 5.0,
            "max_concurrent_requests": 2.0,
            "mean_ttft_ms": 10.0, "median_ttft_ms": 10.0, "std_ttft_ms": 1.0, "p99_ttft_ms": 11.0, "p50_ttft_ms": 10.0,
            "mean_tpot_ms": 5.0, "median_tpot_ms": 5.0, "std_tpot_ms": 0.0, "p99_tpot_ms": 5.0,
            "mean_itl_ms": 5.0, "median_itl_ms": 5.0, "std_itl_ms": 0.0, "p99_itl_ms": 5.0,
            "input_lens": [10, 10], "output_lens": [3, 3], "ttfts": [0.01, 0.011],
            "itls": [[0.005, 0.005], [0.005, 0.005]], "errors": ["", ""]
        })
    }

    #[test]
    fn counts_too_large_and_odd_percentiles_are_not_taken() {
        let mut v = serde_json::json!({"completed": 4294967296u64, "duration": 1.0, "total_input_tokens": 1, "total_output_tokens": 1,
            "request_throughput": 1.0, "output_throughput": 1.0, "total_token_throughput": 1.0});
        assert!(parse(&v).unwrap_err().to_string().contains("\"completed\" is too large"));
        v["completed"] = 1.into();
        for k in ["pNaN_ttft_ms", "pinf_ttft_ms", "p1e3_ttft_ms", "p0_ttft_ms"] {
            v[k] = 5.0.into();
        }
        v["mean_ttft_ms"] = 6.0.into();
        v["p99_ttft_ms"] = 7.0.into();
        assert_eq!(parse(&v).unwrap().summary.ttft.percentiles, vec![(99.0, 7.0)]);
    }

    #[test]
    fn reads_summary_percentiles_and_records() {
        let p = parse(&sample()).unwrap();
        assert_eq!(p.summary.completed, 2);
        assert_eq!(p.summary.request_rate, None);
        assert_eq!(p.summary.ttft.percentiles, vec![(50.0, 10.0), (99.0, 11.0)]);
        assert!(p.missing.contains(&"e2el".to_string()));
        assert_eq!(p.requests.len(), 2);
        assert!((p.requests[1].e2el_s.unwrap() - 0.021).abs() < 1e-12);
        assert_eq!(p.model.as_deref(), Some("Qwen/Qwen3-8B"));
    }

    #[test]
    fn bad_files_name_the_problem() {
        let mut v = sample();
        v.as_object_mut().unwrap().remove("duration");
        assert!(parse(&v).unwrap_err().to_string().contains("\"duration\""));
        let mut v = sample();
        v["completed"] = serde_json::json!("lots");
        assert!(parse(&v).unwrap_err().to_string().contains("\"completed\" must be a number"));
        let mut v = sample();
        v["ttfts"] = serde_json::json!([0.01]);
        assert!(parse(&v).unwrap_err().to_string().contains("differ in length"));
        assert!(parse_str("{not json").unwrap_err().to_string().contains("line 1"));
    }
}
