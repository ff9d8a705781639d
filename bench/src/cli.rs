//! The `latlab-bench` command line: `vllm bench serve`'s flag names where the concept is
//! the same, turned into a validated `RunSpec`. Kept out of the library's public API.

use anyhow::{bail, Context};
use bench_types::{Backend, Dataset, Goodput, LoadProfile, RunSpec, Sampling, Target};
use clap::Parser;

#[derive(Parser, Debug)]
#[command(name = "latlab-bench", version, about = "Benchmark an OpenAI-compatible server with the semantics of `vllm bench serve`.")]
pub struct Args {
    /// Server base URL (no path), e.g. http://127.0.0.1:8000
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// API path; must agree with --backend (/v1/chat/completions or /v1/completions).
    #[arg(long)]
    pub endpoint: Option<String>,
    #[arg(long, default_value = "openai-chat", value_parser = ["openai-chat", "openai"])]
    pub backend: String,
    /// Model name sent in every request.
    #[arg(long)]
    pub model: Option<String>,
    /// HF tokenizer.json (or its folder); default: the Qwen3 tokenizer fetched by setup.
    #[arg(long)]
    pub tokenizer: Option<String>,
    #[arg(long, default_value = "sharegpt", value_parser = ["sharegpt", "random", "jsonl"])]
    pub dataset_name: String,
    #[arg(long)]
    pub dataset_path: Option<String>,
    #[arg(long, default_value_t = 1000)]
    pub num_prompts: u32,
    /// One value, or several (comma-separated) for a sweep: 1,2,4,8
    #[arg(long, value_delimiter = ',')]
    pub max_concurrency: Vec<u32>,
    /// Requests per second, or inf.
    #[arg(long, default_value = "inf")]
    pub request_rate: String,
    #[arg(long, default_value_t = 1.0)]
    pub burstiness: f64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long)]
    pub ignore_eos: bool,
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// JSON object merged into every request body.
    #[arg(long)]
    pub extra_body: Option<String>,
    #[arg(long)]
    pub sharegpt_output_len: Option<u32>,
    #[arg(long, default_value_t = 1024)]
    pub random_input_len: u32,
    #[arg(long, default_value_t = 128)]
    pub random_output_len: u32,
    #[arg(long, default_value_t = 0.0)]
    pub random_range_ratio: f64,
    /// Comma-separated subset of ttft,tpot,itl,e2el.
    #[arg(long, default_value = "ttft,tpot,itl")]
    pub percentile_metrics: String,
    /// Comma-separated percentiles, e.g. 50,90,99
    #[arg(long, default_value = "99")]
    pub metric_percentiles: String,
    /// SLOs as KEY:VALUE in ms, e.g. --goodput ttft:200 tpot:50
    #[arg(long, num_args = 1..)]
    pub goodput: Vec<String>,
    #[arg(long, default_value_t = 0)]
    pub warmup_requests: u32,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 600.0)]
    pub request_timeout: f64,
    #[arg(long)]
    pub label: Option<String>,
    /// Write vLLM-compatible result JSON.
    #[arg(long)]
    pub save_result: bool,
    /// Where --save-result writes; created (with its parents) before the run starts.
    #[arg(long)]
    pub result_dir: Option<String>,
    /// Keep the per-request arrays (ttfts, itls, input_lens, output_lens, errors) in the
    /// --save-result JSON; without it they are left out, as vLLM does.
    #[arg(long)]
    pub save_detailed: bool,
    #[arg(long)]
    pub result_filename: Option<String>,
    /// Write latlab's full BenchReport (every request) as JSON to this file.
    #[arg(long)]
    pub report_file: Option<String>,
    /// Run this RunSpec JSON file instead of building one from flags (base URL from flags).
    #[arg(long)]
    pub spec: Option<String>,
    /// No progress bar, no text block: only errors.
    #[arg(long)]
    pub quiet: bool,
    /// Print the BenchReport(s) as JSON on stdout instead of the text block.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    pub fn base_url(&self) -> String {
        self.base_url.clone().unwrap_or_else(|| format!("http://{}:{}", self.host, self.port))
    }

    pub fn metrics(&self) -> anyhow::Result<Vec<bench_types::MetricKind>> {
        bench::report_text::metrics_from_names(&self.percentile_metrics).map_err(|e| anyhow::anyhow!("--percentile-metrics: {e}"))
    }

    pub fn to_spec(&self) -> anyhow::Result<RunSpec> {
        // (local_path below: a RunSpec names files plainly, without `..`.)
        if let Some(path) = &self.spec {
            let text = std::fs::read_to_string(path).with_context(|| format!("cannot read --spec {path}"))?;
            return serde_json::from_str(&text).with_context(|| format!("--spec {path} is not a valid RunSpec"));
        }
        let mut backend = if self.backend == "openai" { Backend::Openai } else { Backend::OpenaiChat };
        if let Some(ep) = &self.endpoint {
            backend = match ep.as_str() {
                "/v1/chat/completions" => Backend::OpenaiChat,
                "/v1/completions" => Backend::Openai,
                other => bail!("--endpoint {other}: only /v1/chat/completions and /v1/completions are supported"),
            };
        }
        let Some(model) = self.model.clone() else { bail!("--model is required") };
        let dataset = match self.dataset_name.as_str() {
            "sharegpt" => Dataset::Sharegpt { path: local_path("--dataset-path", &self.dataset_path)?, output_len: self.sharegpt_output_len },
            "random" => Dataset::Random {
                input_len: self.random_input_len,
                output_len: self.random_output_len,
                range_ratio: self.random_range_ratio,
            },
            _ => match local_path("--dataset-path", &self.dataset_path)? {
                Some(p) => Dataset::Jsonl { path: p },
                None => bail!("--dataset-name jsonl needs --dataset-path"),
            },
        };
        let request_rate = match self.request_rate.trim() {
            "inf" | "Infinity" => None,
            r => Some(r.parse::<f64>().map_err(|_| anyhow::anyhow!("--request-rate {r}: expected a number or inf"))?),
        };
        let extra_body = match &self.extra_body {
            Some(s) => Some(serde_json::from_str(s).with_context(|| "--extra-body is not valid JSON")?),
            None => None,
        };
        self.metrics()?;
        let percentiles = self
            .metric_percentiles
            .split(',')
            .map(|p| p.trim().parse::<f64>().map_err(|_| anyhow::anyhow!("--metric-percentiles: {p:?} is not a number")))
            .collect::<anyhow::Result<Vec<f64>>>()?;
        let spec = RunSpec {
            label: self.label.clone().unwrap_or_default(),
            target: Target::External { base_url: self.base_url(), api_key_env: None },
            model,
            tokenizer: local_path("--tokenizer", &self.tokenizer)?,
            backend,
            dataset,
            num_prompts: self.num_prompts,
            load: LoadProfile { max_concurrency: self.max_concurrency.clone(), request_rate, burstiness: self.burstiness },
            sampling: Sampling { ignore_eos: self.ignore_eos, temperature: Some(self.temperature), extra_body },
            seed: self.seed,
            warmup_requests: self.warmup_requests,
            request_timeout_s: self.request_timeout,
            percentiles,
            goodput: parse_goodput(&self.goodput)?,
            time_limit_s: None,
        };
        spec.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(spec)
    }
}

/// vLLM's `--goodput ttft:200 tpot:50 e2el:1000` (milliseconds).
fn parse_goodput(items: &[String]) -> anyhow::Result<Goodput> {
    let mut g = Goodput::default();
    for item in items {
        let (k, v) = item.split_once(':').with_context(|| format!("--goodput {item:?}: expected KEY:VALUE, e.g. ttft:200"))?;
        let v: f64 = v.parse().map_err(|_| anyhow::anyhow!("--goodput {item:?}: {v:?} is not a number of ms"))?;
        match k {
            "ttft" => g.ttft_ms = Some(v),
            "tpot" => g.tpot_ms = Some(v),
            "e2el" => g.e2el_ms = Some(v),
            _ => bail!("--goodput {item:?}: key must be ttft, tpot or e2el"),
        }
    }
    Ok(g)
}

/// A path from the command line as a `RunSpec` holds it: `..` resolved (a spec refuses
/// `..`, which on a worker would climb out of its folders; here the path is the user's own).
fn local_path(flag: &str, p: &Option<String>) -> anyhow::Result<Option<String>> {
    let Some(p) = p else { return Ok(None) };
    if !p.split('/').any(|part| part == "..") {
        return Ok(Some(p.clone()));
    }
    let real = std::fs::canonicalize(p).with_context(|| format!("cannot read {flag} {p}"))?;
    Ok(Some(real.to_string_lossy().into_owned()))
}
