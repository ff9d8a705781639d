//! Prompts to send: ShareGPT with vLLM's sampling rules, random token prompts, or a JSONL
//! file. Every source yields the same `SampleRequest`s, with token counts from the run's
//! tokenizer, plus notes about the data for the report.

mod jsonl;
mod random;
mod sharegpt;
pub mod sharegpt_reader;

use crate::error::BenchError;
use crate::tokenizer::TokenCounter;
use bench_types::Dataset;
use tokio_util::sync::CancellationToken;

/// One prompt with its token counts.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    pub prompt: String,
    /// Tokens of the raw prompt text (no chat template), as vLLM counts them.
    pub input_tokens: u32,
    /// `max_completion_tokens` / `max_tokens` to ask for.
    pub output_len: u32,
}

#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub requests: Vec<SampleRequest>,
    /// Facts about the data worth showing beside the results.
    pub notes: Vec<String>,
}

/// How the prompts are picked beyond the dataset's own settings (vLLM's
/// `--disable-shuffle` and `--no-oversample`, inverted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleOptions {
    /// Shuffle ShareGPT conversations with the seed before picking.
    pub shuffle: bool,
    /// Repeat prompts to reach `n` when fewer pass the filters.
    pub oversample: bool,
}

impl Default for SampleOptions {
    fn default() -> Self {
        SampleOptions { shuffle: true, oversample: true }
    }
}

impl SampleOptions {
    pub fn from_spec(spec: &bench_types::RunSpec) -> Self {
        SampleOptions { shuffle: !spec.disable_shuffle, oversample: !spec.no_oversample }
    }
}

/// Draws `n` requests from `dataset`, deterministically from `seed`; stops with
/// `BenchError::Cancelled` soon after `cancel` fires.
pub fn sample(
    dataset: &Dataset,
    n: usize,
    seed: u64,
    tok: &TokenCounter,
    cancel: &CancellationToken,
) -> Result<Sample, BenchError> {
    sample_with(dataset, n, seed, SampleOptions::default(), tok, cancel)
}

/// `sample` with shuffling and oversampling as `opts` says.
pub fn sample_with(
    dataset: &Dataset,
    n: usize,
    seed: u64,
    opts: SampleOptions,
    tok: &TokenCounter,
    cancel: &CancellationToken,
) -> Result<Sample, BenchError> {
    match dataset {
        Dataset::Sharegpt { path, output_len } => {
            let path = path
                .as_ref()
                .map(std::path::PathBuf::from)
                .unwrap_or_else(crate::assets::default_sharegpt_path);
            sharegpt::sample(&path, n, seed, *output_len, opts, tok, cancel)
        }
        Dataset::Random { input_len, output_len, range_ratio, prefix_len } => Ok(random::sample(
            n,
            random::Lengths {
                input: *input_len,
                output: *output_len,
                ratio: *range_ratio,
                prefix: *prefix_len,
            },
            seed,
            tok,
        )),
        Dataset::Jsonl { path } => jsonl::sample(std::path::Path::new(path), n, seed, opts, tok, cancel),
    }
}

/// vLLM's oversampling when fewer than `n` requests pass the filters: `random.seed(seed)`
/// then `random.choices(samples, k=n-len)`, appended. With `--no-oversample` the short
/// sample runs as it is.
fn oversample(
    requests: &mut Vec<SampleRequest>,
    n: usize,
    seed: u64,
    opts: SampleOptions,
    notes: &mut Vec<String>,
) {
    if requests.is_empty() || requests.len() >= n {
        return;
    }
    if !opts.oversample {
        notes.push(format!(
            "only {} prompts passed the filters; {} run (--no-oversample)",
            requests.len(),
            requests.len()
        ));
        return;
    }
    let have = requests.len();
    let mut mt = crate::mt19937::Mt19937::python_seeded(seed);
    for i in crate::pyrandom::choices(&mut mt, have, n - have) {
        requests.push(requests[i].clone());
    }
    notes.push(format!(
        "only {have} prompts passed the filters; {} were repeated to reach {n} (vLLM oversampling)",
        n - have
    ));
}
