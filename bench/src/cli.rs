//! The `latlab-bench` command line: `vllm bench serve`'s flag names, with vLLM's meaning,
//! turned into a validated `RunSpec` (`cli_spec`). Flags vLLM has that latlab cannot honour
//! are refused there, before any request, with the reason. Kept out of the library's
//! public API.

use clap::Parser;

#[derive(Parser, Debug)]
// A flag given twice keeps its last value, as vLLM's argparse does with pasted commands.
#[command(
    name = "latlab-bench",
    version,
    args_override_self = true,
    about = "Benchmark an OpenAI-compatible server with the semantics of `vllm bench serve`."
)]
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
    /// openai-chat (/v1/chat/completions); openai or vllm (both /v1/completions, as in vLLM).
    #[arg(long, default_value = "openai-chat", value_parser = ["openai-chat", "openai", "vllm"])]
    pub backend: String,
    /// Model id: the name sent in every request unless --served-model-name, and the saved
    /// result's model_id.
    #[arg(long)]
    pub model: Option<String>,
    /// The model name sent in requests when it differs from --model (vLLM's meaning).
    #[arg(long)]
    pub served_model_name: Option<String>,
    /// HF tokenizer.json (or its folder); default: the Qwen3 tokenizer fetched by setup.
    #[arg(long)]
    pub tokenizer: Option<String>,
    #[arg(long, default_value = "sharegpt", value_parser = ["sharegpt", "random", "jsonl", "custom", "prefix_repetition"])]
    pub dataset_name: String,
    #[arg(long)]
    pub dataset_path: Option<String>,
    #[arg(long, default_value_t = 1000)]
    pub num_prompts: u32,
    /// Run only the prompts that pass the dataset's filters, without repeating some to
    /// reach --num-prompts.
    #[arg(long)]
    pub no_oversample: bool,
    /// Take ShareGPT conversations in file order instead of shuffled by --seed.
    #[arg(long)]
    pub disable_shuffle: bool,
    /// Accepted; changes nothing: latlab never applies a chat template client-side.
    #[arg(long)]
    pub skip_chat_template: bool,
    /// Accepted; changes nothing: in vLLM it only stops Hugging Face datasets from loading
    /// as a stream, and latlab's datasets are local files.
    #[arg(long)]
    pub no_stream: bool,
    /// One value, or several (comma-separated) for a sweep: 1,2,4,8
    #[arg(long, value_delimiter = ',')]
    pub max_concurrency: Vec<u32>,
    /// Requests per second, or inf.
    #[arg(long, default_value = "inf")]
    pub request_rate: String,
    #[arg(long, default_value_t = 1.0)]
    pub burstiness: f64,
    /// Let the request rate climb over the run instead of --request-rate.
    #[arg(long, value_parser = ["linear", "exponential"])]
    pub ramp_up_strategy: Option<String>,
    /// Requests/s of the first request (with --ramp-up-strategy).
    #[arg(long)]
    pub ramp_up_start_rps: Option<u32>,
    /// Requests/s of the last request (with --ramp-up-strategy).
    #[arg(long)]
    pub ramp_up_end_rps: Option<u32>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Always on with --dataset-name random, as in vLLM.
    #[arg(long)]
    pub ignore_eos: bool,
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    #[arg(long)]
    pub top_p: Option<f64>,
    #[arg(long, allow_negative_numbers = true)]
    pub top_k: Option<i64>,
    #[arg(long)]
    pub min_p: Option<f64>,
    #[arg(long, allow_negative_numbers = true)]
    pub frequency_penalty: Option<f64>,
    #[arg(long, allow_negative_numbers = true)]
    pub presence_penalty: Option<f64>,
    #[arg(long)]
    pub repetition_penalty: Option<f64>,
    /// JSON object merged into every request body (its keys win over the flags above).
    #[arg(long)]
    pub extra_body: Option<String>,
    /// Refused: vLLM hands these to a chat template it renders client-side; latlab renders none.
    #[arg(long)]
    pub chat_template_kwargs: Option<String>,
    /// Headers sent with every request, e.g. --header x-route=a x-b=c (never saved).
    #[arg(long, num_args = 0..)]
    pub header: Vec<String>,
    /// Measured request i carries `x-request-id: <prefix><i>`.
    #[arg(long)]
    pub request_id_prefix: Option<String>,
    /// Before the run, send the first prompt until it succeeds, for at most this many
    /// seconds (then fail); 0 skips the check.
    #[arg(long, default_value_t = 0)]
    pub ready_check_timeout_sec: u64,
    /// Generic input length: sets --random-input-len.
    #[arg(long)]
    pub input_len: Option<u32>,
    /// Generic output length: sets --random-output-len and --sharegpt-output-len.
    #[arg(long)]
    pub output_len: Option<u32>,
    #[arg(long)]
    pub sharegpt_output_len: Option<u32>,
    #[arg(long, default_value_t = 1024)]
    pub random_input_len: u32,
    #[arg(long, default_value_t = 128)]
    pub random_output_len: u32,
    #[arg(long, default_value_t = 0.0)]
    pub random_range_ratio: f64,
    /// Random tokens put before every random prompt, the same for all.
    #[arg(long, default_value_t = 0)]
    pub random_prefix_len: u32,
    #[arg(long, hide = true)]
    pub custom_output_len: Option<u32>,
    #[arg(long, hide = true)]
    pub prefix_repetition_prefix_len: Option<u32>,
    #[arg(long, hide = true)]
    pub prefix_repetition_suffix_len: Option<u32>,
    #[arg(long, hide = true)]
    pub prefix_repetition_num_prefixes: Option<u32>,
    #[arg(long, hide = true)]
    pub prefix_repetition_output_len: Option<u32>,
    /// Comma-separated subset of ttft,tpot,itl,e2el.
    #[arg(long, default_value = "ttft,tpot,itl")]
    pub percentile_metrics: String,
    /// Comma-separated percentiles, e.g. 50,90,99
    #[arg(long, default_value = "99")]
    pub metric_percentiles: String,
    /// SLOs as KEY:VALUE in ms, e.g. --goodput ttft:200 tpot:50
    #[arg(long, num_args = 1..)]
    pub goodput: Vec<String>,
    /// Warm-up requests (vLLM's --num-warmups): the first prompt, this many times, under
    /// the concurrency cap, before measuring.
    #[arg(long, visible_alias = "num-warmups", default_value_t = 0)]
    pub warmup_requests: u32,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 600.0)]
    pub request_timeout: f64,
    #[arg(long)]
    pub label: Option<String>,
    /// Write vLLM-compatible result JSON.
    #[arg(long)]
    pub save_result: bool,
    /// Append the result JSON, one object per line, to the result file (implies saving).
    #[arg(long)]
    pub append_result: bool,
    /// KEY=VALUE pairs saved in the result JSON, e.g. --metadata version=0.3.3 tp=1
    #[arg(long, num_args = 0..)]
    pub metadata: Vec<String>,
    /// Where results are written; created (with its parents) before the run starts.
    #[arg(long)]
    pub result_dir: Option<String>,
    /// Keep the per-request arrays (ttfts, itls, input_lens, output_lens, errors) in the
    /// saved JSON; without it they are left out, as vLLM does.
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
    /// No progress bar.
    #[arg(long)]
    pub disable_tqdm: bool,
    /// Print the BenchReport(s) as JSON on stdout instead of the text block.
    #[arg(long)]
    pub json: bool,
}

impl Args {
    pub fn base_url(&self) -> String {
        self.base_url.clone().unwrap_or_else(|| format!("http://{}:{}", self.host, self.port))
    }

    pub fn metrics(&self) -> anyhow::Result<Vec<bench_types::MetricKind>> {
        bench::report_text::metrics_from_names(&self.percentile_metrics)
            .map_err(|e| anyhow::anyhow!("--percentile-metrics: {e}"))
    }

    /// Whether a result file is written.
    pub fn saves(&self) -> bool {
        self.save_result || self.append_result
    }

    /// The `--backend` name the saved result carries (vLLM writes the flag as given).
    pub fn backend_name(&self) -> &str {
        &self.backend
    }
}
