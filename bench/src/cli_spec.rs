//! From `latlab-bench`'s flags to a validated `RunSpec` and the request options that stay
//! out of it, with vLLM's meaning for each flag. Flags latlab cannot honour are refused
//! here, before any request, each naming itself and the reason.

use crate::cli::Args;
use anyhow::{Context, bail};
use bench::RequestOptions;
use bench_types::{
    Backend, Dataset, Goodput, LoadProfile, RampUp, RampUpStrategy, RunSpec, Sampling, Target,
};
use reqwest::header::{HeaderName, HeaderValue};

impl Args {
    pub fn to_spec(&self) -> anyhow::Result<RunSpec> {
        self.refuse_unsupported()?;
        // Flags read after the run are checked now, so a typo never costs a benchmark.
        self.metrics()?;
        self.request_options()?;
        self.metadata()?;
        // (local_path below: a RunSpec names files plainly, without `..`.)
        if let Some(path) = &self.spec {
            let text = std::fs::read_to_string(path).with_context(|| format!("cannot read --spec {path}"))?;
            return serde_json::from_str(&text)
                .with_context(|| format!("--spec {path} is not a valid RunSpec"));
        }
        let mut backend = if self.backend == "openai-chat" { Backend::OpenaiChat } else { Backend::Openai };
        if let Some(ep) = &self.endpoint {
            backend = match ep.as_str() {
                "/v1/chat/completions" => Backend::OpenaiChat,
                "/v1/completions" => Backend::Openai,
                other => {
                    bail!("--endpoint {other}: only /v1/chat/completions and /v1/completions are supported")
                }
            };
        }
        let Some(model) = self.model.clone() else { bail!("--model is required") };
        let dataset = self.dataset()?;
        let request_rate = match self.request_rate.trim() {
            "inf" | "Infinity" => None,
            r => Some(
                r.parse::<f64>()
                    .map_err(|_| anyhow::anyhow!("--request-rate {r}: expected a number or inf"))?,
            ),
        };
        let extra_body = match &self.extra_body {
            Some(s) => Some(serde_json::from_str(s).with_context(|| "--extra-body is not valid JSON")?),
            None => None,
        };
        let percentiles = self
            .metric_percentiles
            .split(',')
            .map(|p| {
                p.trim()
                    .parse::<f64>()
                    .map_err(|_| anyhow::anyhow!("--metric-percentiles: {p:?} is not a number"))
            })
            .collect::<anyhow::Result<Vec<f64>>>()?;
        let spec = RunSpec {
            label: self.label.clone().unwrap_or_default(),
            target: Target::External { base_url: self.base_url(), api_key_env: None },
            // vLLM sends --served-model-name when given; --model stays the result's model_id.
            model: self.served_model_name.clone().unwrap_or(model),
            tokenizer: local_path("--tokenizer", &self.tokenizer)?,
            backend,
            // vLLM forces ignore_eos for the random dataset; saying so in the spec keeps it honest.
            sampling: Sampling {
                ignore_eos: self.ignore_eos || matches!(dataset, Dataset::Random { .. }),
                temperature: Some(self.temperature),
                extra_body,
                top_p: self.top_p,
                top_k: self.top_k,
                min_p: self.min_p,
                frequency_penalty: self.frequency_penalty,
                presence_penalty: self.presence_penalty,
                repetition_penalty: self.repetition_penalty,
            },
            dataset,
            num_prompts: self.num_prompts,
            load: LoadProfile {
                max_concurrency: self.max_concurrency.clone(),
                request_rate,
                request_rates: vec![],
                burstiness: self.burstiness,
            },
            seed: self.seed,
            warmup_requests: self.warmup_requests,
            request_timeout_s: self.request_timeout,
            percentiles,
            goodput: parse_goodput(&self.goodput)?,
            time_limit_s: None,
            ramp_up: self.ramp_up()?,
            disable_shuffle: self.disable_shuffle,
            no_oversample: self.no_oversample,
        };
        spec.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(spec)
    }

    /// vLLM flags whose meaning latlab cannot give, refused with the reason.
    fn refuse_unsupported(&self) -> anyhow::Result<()> {
        if self.dataset_name == "custom" || self.custom_output_len.is_some() {
            bail!(
                "--dataset-name custom is not supported: vLLM renders the model's chat template into each prompt on the client \
                 (unless --skip-chat-template), which latlab cannot do, and latlab's runs have no dataset kind for vLLM's \
                 custom files yet; write the prompts as --dataset-name jsonl lines {{\"prompt\": ..., \"output_len\": N}}"
            );
        }
        let prefix_flags = [
            self.prefix_repetition_prefix_len,
            self.prefix_repetition_suffix_len,
            self.prefix_repetition_num_prefixes,
            self.prefix_repetition_output_len,
        ];
        if self.dataset_name == "prefix_repetition" || prefix_flags.iter().any(Option::is_some) {
            bail!(
                "--dataset-name prefix_repetition is not supported yet: latlab's runs have no dataset kind for several \
                 repeated prefixes; for one random prefix shared by every prompt use --dataset-name random \
                 --random-prefix-len N --random-input-len M"
            );
        }
        if self.chat_template_kwargs.is_some() {
            bail!(
                "--chat-template-kwargs is not supported: vLLM passes it to a chat template it renders into prompts on the \
                 client (custom datasets), and latlab renders none; to have the server apply template arguments, send \
                 them with --extra-body '{{\"chat_template_kwargs\": {{...}}}}'"
            );
        }
        Ok(())
    }

    fn dataset(&self) -> anyhow::Result<Dataset> {
        // vLLM's generic lengths override the dataset-specific flags.
        let output_len = self.output_len;
        Ok(match self.dataset_name.as_str() {
            "sharegpt" => Dataset::Sharegpt {
                path: local_path("--dataset-path", &self.dataset_path)?,
                output_len: output_len.or(self.sharegpt_output_len),
            },
            "random" => {
                if let Some(p) = &self.dataset_path {
                    bail!(
                        "--dataset-path {p}: the random dataset reads no file (vLLM refuses this too); use --dataset-name sharegpt or jsonl for a file"
                    );
                }
                Dataset::Random {
                    input_len: self.input_len.unwrap_or(self.random_input_len),
                    output_len: output_len.unwrap_or(self.random_output_len),
                    range_ratio: self.random_range_ratio,
                    prefix_len: self.random_prefix_len,
                }
            }
            _ => match local_path("--dataset-path", &self.dataset_path)? {
                Some(p) => Dataset::Jsonl { path: p },
                None => bail!("--dataset-name jsonl needs --dataset-path"),
            },
        })
    }

    fn ramp_up(&self) -> anyhow::Result<Option<RampUp>> {
        let Some(strategy) = &self.ramp_up_strategy else {
            if self.ramp_up_start_rps.is_some() || self.ramp_up_end_rps.is_some() {
                bail!(
                    "--ramp-up-start-rps / --ramp-up-end-rps need --ramp-up-strategy linear or exponential"
                );
            }
            return Ok(None);
        };
        if self.request_rate.trim() != "inf" {
            bail!(
                "--request-rate {}: with --ramp-up-strategy the ramp sets the rate; leave --request-rate out (vLLM refuses both)",
                self.request_rate
            );
        }
        let (Some(start_rps), Some(end_rps)) = (self.ramp_up_start_rps, self.ramp_up_end_rps) else {
            bail!("--ramp-up-strategy {strategy} needs both --ramp-up-start-rps and --ramp-up-end-rps");
        };
        let strategy =
            if strategy == "linear" { RampUpStrategy::Linear } else { RampUpStrategy::Exponential };
        Ok(Some(RampUp { strategy, start_rps, end_rps }))
    }

    /// `--header`, `--request-id-prefix`, `--ready-check-timeout-sec`.
    pub fn request_options(&self) -> anyhow::Result<RequestOptions> {
        let mut headers = Vec::new();
        for item in &self.header {
            let (k, v) =
                item.split_once('=').with_context(|| format!("--header {item:?}: expected KEY=VALUE"))?;
            let name = HeaderName::from_bytes(k.trim().as_bytes())
                .map_err(|_| anyhow::anyhow!("--header {item:?}: {:?} is not a header name", k.trim()))?;
            let value = HeaderValue::from_str(v.trim())
                .map_err(|_| anyhow::anyhow!("--header {item:?}: the value is not a valid header value"))?;
            headers.push((name, value));
        }
        if let Some(p) = &self.request_id_prefix
            && HeaderValue::from_str(p).is_err()
        {
            bail!("--request-id-prefix {p:?}: not usable in the x-request-id header");
        }
        Ok(RequestOptions {
            headers,
            request_id_prefix: self.request_id_prefix.clone(),
            ready_check_timeout_s: self.ready_check_timeout_sec as f64,
        })
    }

    /// `--metadata KEY=VALUE...`, trimmed as vLLM trims them.
    pub fn metadata(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.metadata
            .iter()
            .map(|item| {
                let (k, v) = item
                    .split_once('=')
                    .with_context(|| format!("--metadata {item:?}: expected KEY=VALUE"))?;
                Ok((k.trim().to_string(), v.trim().to_string()))
            })
            .collect()
    }

    /// Lines to print for flags that are accepted but change nothing here.
    pub fn flag_notes(&self) -> Vec<&'static str> {
        let mut notes = Vec::new();
        if self.no_stream {
            notes.push("--no-stream changes nothing: in vLLM it only stops Hugging Face datasets from loading as a stream");
        }
        if self.skip_chat_template {
            notes.push("--skip-chat-template changes nothing: latlab never applies a chat template on the client (vLLM's sharegpt and random datasets do not either)");
        }
        notes
    }
}

/// vLLM's `--goodput ttft:200 tpot:50 e2el:1000` (milliseconds).
fn parse_goodput(items: &[String]) -> anyhow::Result<Goodput> {
    let mut g = Goodput::default();
    for item in items {
        let (k, v) = item
            .split_once(':')
            .with_context(|| format!("--goodput {item:?}: expected KEY:VALUE, e.g. ttft:200"))?;
        let v: f64 =
            v.parse().map_err(|_| anyhow::anyhow!("--goodput {item:?}: {v:?} is not a number of ms"))?;
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
