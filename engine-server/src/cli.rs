//! The command line of `latlab-engine`. latlab's worker starts it as a child process with
//! these flags: keep them stable.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "latlab-engine",
    version,
    about = "latlab's native Qwen3 inference engine with an OpenAI-compatible HTTP API"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve /v1/chat/completions, /v1/completions, /v1/models, /health, /metrics, /v1/engine/info.
    Serve(ServeArgs),
    /// Write a random-weight Hugging Face checkpoint (config, bf16 or FP8 safetensors, tokenizer).
    MakeModel(MakeModelArgs),
    /// Measure engine speed in-process (no HTTP): TTFT and decode tokens/s.
    Bench(BenchArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DeviceArg {
    Auto,
    Cpu,
    Cuda,
}

impl DeviceArg {
    pub fn engine(self) -> engine::plan::Device {
        match self {
            DeviceArg::Auto => engine::plan::Device::Auto,
            DeviceArg::Cpu => engine::plan::Device::Cpu,
            DeviceArg::Cuda => engine::plan::Device::Cuda,
        }
    }
}

/// `--quantization`: how the linear projections are held (see engine::model_source).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum QuantArg {
    /// Unquantized (an error for an FP8 checkpoint).
    None,
    /// float8_e4m3fn with one scale per 128x128 block, as Qwen/Qwen3-8B-FP8.
    Fp8,
}

impl QuantArg {
    pub fn engine(self) -> engine::model_source::Quantization {
        match self {
            QuantArg::None => engine::model_source::Quantization::None,
            QuantArg::Fp8 => engine::model_source::Quantization::Fp8,
        }
    }
}

/// `--fp8-prefill-weights`: how an FP8 model's projections reach prefill's GEMMs on CUDA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Fp8PrefillArg {
    /// Keep a bf16 copy of every projection from load (2 bytes per weight of GPU memory
    /// more; prefill as fast as bf16 weights).
    Bf16Copy,
    /// Dequantize each projection into a scratch buffer at every prefill (no extra memory,
    /// slower TTFT).
    Dequant,
}

impl Fp8PrefillArg {
    pub fn engine(self) -> engine::plan::Fp8Prefill {
        match self {
            Fp8PrefillArg::Bf16Copy => engine::plan::Fp8Prefill::Bf16Copy,
            Fp8PrefillArg::Dequant => engine::plan::Fp8Prefill::Dequant,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    pub load: ModelFlags,
    /// The model id served on /v1/models and accepted in requests (default: the --model value).
    #[arg(long)]
    pub served_model_name: Option<String>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// 0 picks a free port; the bound address is printed as `listening on http://HOST:PORT`.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Most sequences in one batch (default: 64 on CUDA, the largest captured decode graph;
    /// 8 on CPU).
    #[arg(long)]
    pub max_batch: Option<usize>,
    /// KV cache pages (default: derived from max batch, model length and a memory budget).
    #[arg(long)]
    pub kv_pages: Option<usize>,
    /// Tokens per KV page.
    #[arg(long, default_value_t = 16)]
    pub block_size: usize,
    /// Token budget of one scheduler step (prefill chunk size).
    #[arg(long, default_value_t = 512)]
    pub max_batched_tokens: usize,
}

/// Which model `serve` and `bench` load, and how: the same flags for both.
#[derive(clap::Args, Debug)]
pub struct ModelFlags {
    /// A Hugging Face checkpoint directory, or `random:<preset>` (tiny, tiny-untied, tiny-mqa,
    /// qwen3-0.6b, qwen3-8b) for seeded random weights built in memory.
    #[arg(long)]
    pub model: String,
    /// auto: CUDA when a GPU is present, else CPU.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    pub device: DeviceArg,
    /// Longest prompt + completion in tokens (default: min(model's max, 4096) on CPU).
    #[arg(long)]
    pub max_model_len: Option<usize>,
    /// Seed of random weights and of requests that bring no seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Directory with tokenizer.json (+ tokenizer_config.json). Default: the checkpoint dir,
    /// or $LATLAB_ASSETS_DIR/qwen3 (assets/cache/qwen3) for random presets.
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Linear projections in FP8: `fp8` quantizes a bf16 checkpoint (or random preset) at
    /// load. Default: as the checkpoint stores them (an FP8 checkpoint needs no flag).
    #[arg(long, value_enum)]
    pub quantization: Option<QuantArg>,
    /// FP8 models on CUDA: how prefill's GEMMs get bf16 weights (decode reads FP8 either way).
    #[arg(long, value_enum, default_value_t = Fp8PrefillArg::Bf16Copy)]
    pub fp8_prefill_weights: Fp8PrefillArg,
    #[command(flatten)]
    pub speculative: crate::speculative_flags::SpeculativeFlags,
}

#[derive(clap::Args, Debug)]
pub struct MakeModelArgs {
    #[arg(long)]
    pub preset: String,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long)]
    pub out: PathBuf,
    /// Directory of the tokenizer files to copy (default $LATLAB_ASSETS_DIR/qwen3).
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Split safetensors into shards of at most this many bytes (with an index JSON).
    #[arg(long, default_value_t = 4_000_000_000)]
    pub max_shard_bytes: usize,
    /// `fp8`: write Qwen/Qwen3-8B-FP8's layout (F8_E4M3 projections with f32
    /// `weight_scale_inv` per 128x128 block, quantization_config in config.json): the FP8
    /// quantization of the same random model.
    #[arg(long, value_enum, default_value_t = QuantArg::None)]
    pub quantization: QuantArg,
    /// Write a random EAGLE-3 draft for the `--preset` target instead of the target (the
    /// published drafts' layout: config.json and bf16 model.safetensors with `d2t`/`t2d`);
    /// with the default seed it is the draft `random:<preset>-eagle3` builds.
    #[arg(long)]
    pub eagle3: bool,
    /// With `--eagle3`: the draft vocabulary (default 32000 for the real shapes, 1024 for
    /// the tiny ones).
    #[arg(long, requires = "eagle3")]
    pub draft_vocab: Option<usize>,
}

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub load: ModelFlags,
    /// Batch sizes, comma-separated (`1,8`): each round runs them in turn over one load of
    /// the model, sized for the largest (its KV pages and step budget).
    #[arg(long, value_delimiter = ',', default_value = "1", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub batch: Vec<u64>,
    #[arg(long, default_value_t = 128)]
    pub prompt_len: usize,
    #[arg(long, default_value_t = 32)]
    pub gen_len: usize,
    #[arg(long, default_value_t = 2)]
    pub rounds: usize,
}
