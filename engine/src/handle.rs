//! Starting the engine and the handle HTTP handlers hold: `submit(request)` returns a
//! bounded stream of token events. The handle is cheap to clone; the model lives on the
//! engine thread alone.

use crate::arrivals::Arrivals;
use crate::config::ModelConfig;
use crate::engine_loop::{Command, EngineLoop, EngineStats};
use crate::error::{EngineError, Result};
use crate::model::Backend;
use crate::model::cpu::CpuBackend;
use crate::plan::{EngineArgs, Plan};
use crate::request::{GenerateRequest, TokenEvent};
use crate::tokenizer::Tokenizer;
use crate::weights::{ModelWeights, WeightsOrigin};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use tokio::sync::mpsc as tmpsc;

/// Requests queued for the engine thread beyond which `submit` answers QueueFull.
const COMMAND_QUEUE: usize = 1024;

pub struct EngineShared {
    pub config: ModelConfig,
    pub plan: Plan,
    pub origin: WeightsOrigin,
    pub tokenizer: Tokenizer,
    pub stats: Arc<EngineStats>,
    /// The draft and tree when the engine speculates.
    pub speculative: Option<crate::spec::SpecInfo>,
    alive: Arc<AtomicBool>,
    next_id: AtomicU64,
}

impl EngineShared {
    /// False once the engine thread has ended.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Relaxed)
    }
}

#[derive(Clone)]
pub struct EngineHandle {
    shared: Arc<EngineShared>,
    tx: mpsc::SyncSender<Command>,
    /// Commands sent and not yet accepted by the engine loop (arrivals.rs).
    arrivals: Arrivals,
    /// The engine thread, for `shutdown` to join.
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl EngineHandle {
    /// Load the model named by `model` (dir or `random:<preset>`), derive the plan and start
    /// the engine thread.
    pub fn start(model: &str, tokenizer: Option<&Path>, args: &EngineArgs) -> Result<EngineHandle> {
        // The effective config first: a bad --quantization fails before any weights load.
        let cfg = crate::model_source::effective_config(model, args.quantization)?;
        let plan = Plan::derive(&cfg, args)?;
        let loaded = crate::model_source::load(model, args.seed, tokenizer, args.quantization)?;
        let tok = Tokenizer::from_dir(&loaded.tokenizer_dir)?;
        // Every id the model can emit must decode: the tokenizer must not be smaller than the
        // embedding minus padding rows (Qwen3 pads 151,669 ids to 151,936 rows).
        if tok.vocab_size() > loaded.config.vocab_size {
            return Err(EngineError::config(
                "vocab_size",
                format!(
                    "{} is smaller than the tokenizer's {} ids",
                    loaded.config.vocab_size,
                    tok.vocab_size()
                ),
            ));
        }
        let mut plan = plan;
        let backend = if plan.backend == "cuda" {
            cuda_backend(&loaded.config, loaded.weights, &mut plan, args.speculative.as_ref())?
        } else {
            cpu_backend(&loaded.config, loaded.weights, &plan, args.speculative.as_ref())?
        };
        let speculative = match (&args.speculative, backend.draft_info()) {
            (Some(s), Some(info)) => Some(crate::spec::SpecInfo {
                synthetic_acceptance: s.synthetic_acceptance,
                draft_device: backend.draft_device(),
                ..crate::spec::SpecInfo::new(s.cfg, info)
            }),
            _ => None,
        };
        let synthetic = match &args.speculative {
            Some(crate::spec::SpeculativeArgs { synthetic_acceptance: Some(l), cfg, .. }) => {
                Some(crate::spec::synthetic::Synthetic::new(*l, cfg.num_steps, loaded.config.vocab_size)?)
            }
            _ => None,
        };
        let stats = Arc::new(EngineStats::default());
        let arrivals = Arrivals::default();
        let engine = EngineLoop::new(
            backend,
            &plan,
            loaded.config.eos_token_ids.clone(),
            args.seed,
            stats.clone(),
            arrivals.clone(),
        )
        .with_synthetic(synthetic);
        let (tx, rx) = mpsc::sync_channel(COMMAND_QUEUE);
        let alive = Arc::new(AtomicBool::new(true));
        let alive_flag = alive.clone();
        let thread = std::thread::Builder::new()
            .name("engine".into())
            .spawn(move || {
                // Marks the engine dead however the thread ends (a bug that panics outside
                // a forward), so /health can say so instead of accepting doomed requests.
                let _alive = AliveGuard(alive);
                engine.run(rx)
            })
            .map_err(|e| EngineError::io("engine thread", e))?;
        tracing::info!(plan = ?plan, origin = ?loaded.origin, "engine started");
        let shared = EngineShared {
            config: loaded.config,
            plan,
            origin: loaded.origin,
            tokenizer: tok,
            stats,
            speculative,
            next_id: AtomicU64::new(1),
            alive: alive_flag,
        };
        Ok(EngineHandle {
            shared: Arc::new(shared),
            tx,
            arrivals,
            thread: Arc::new(Mutex::new(Some(thread))),
        })
    }

    /// Close the queue and wait until the engine thread has finished and dropped the model
    /// (its GPU memory, graphs and modules). A process that returns from main while the
    /// thread still releases them can have the CUDA driver torn down under it: an FP8
    /// `latlab-engine bench` segfaulted that way after its last round (H200, 2026-11-30).
    /// Only the last handle can wait (the thread runs while any other holds the queue).
    pub fn shutdown(self) -> Result<()> {
        let EngineHandle { thread, tx, .. } = self;
        drop(tx);
        let Ok(thread) = Arc::try_unwrap(thread) else {
            return Err(EngineError::Backend("shutdown: other engine handles are still alive".into()));
        };
        // A poisoned lock only means a panic elsewhere; the join handle is still ours.
        let joined = thread.into_inner().unwrap_or_else(|e| e.into_inner());
        match joined {
            Some(j) => j.join().map_err(|_| EngineError::Backend("the engine thread panicked".into())),
            None => Ok(()),
        }
    }

    /// False once the engine thread has ended.
    pub fn is_alive(&self) -> bool {
        self.shared.is_alive()
    }

    pub fn shared(&self) -> &Arc<EngineShared> {
        &self.shared
    }

    /// Validate and enqueue a request. Dropping the returned receiver cancels it.
    pub fn submit(&self, req: GenerateRequest) -> Result<tmpsc::Receiver<TokenEvent>> {
        req.params.validate()?;
        let s = &self.shared;
        let max_len = s.plan.max_model_len;
        if req.prompt.is_empty() {
            return Err(EngineError::BadRequest("the prompt is empty".into()));
        }
        if let Some(&bad) = req.prompt.iter().find(|&&t| t as usize >= s.config.vocab_size) {
            return Err(EngineError::BadRequest(format!("token id {bad} is out of range")));
        }
        let max_tokens = req.params.max_tokens.unwrap_or(max_len.saturating_sub(req.prompt.len()));
        if req.prompt.len() + max_tokens > max_len || max_tokens == 0 {
            return Err(EngineError::BadRequest(format!(
                "this model's maximum context length is {max_len} tokens; the prompt has {} and {} more were requested",
                req.prompt.len(),
                max_tokens
            )));
        }
        let id = s.next_id.fetch_add(1, Relaxed);
        // Room for every token plus the final event: the engine thread never waits on a client.
        let (etx, erx) = tmpsc::channel(max_tokens + 2);
        let mut req = req;
        req.params.max_tokens = Some(max_tokens);
        // Counted before it is queued, so the engine thread never sees the command without
        // the count (it takes one as it accepts the command).
        self.arrivals.sent();
        self.tx.try_send(Command { id, req, events: etx }).map_err(|e| {
            self.arrivals.taken();
            match e {
                mpsc::TrySendError::Full(_) => EngineError::QueueFull,
                mpsc::TrySendError::Disconnected(_) => EngineError::Shutdown,
            }
        })?;
        Ok(erx)
    }
}

/// The CUDA backend over `weights` (dropped once on the GPU), speculating when `spec` asks
/// for a draft; the plan learns the card and the tuning it runs with.
fn cuda_backend(
    cfg: &ModelConfig,
    weights: ModelWeights,
    plan: &mut Plan,
    spec: Option<&crate::spec::SpeculativeArgs>,
) -> Result<Box<dyn Backend>> {
    let mut opts = kernels::GpuOptions::from_env().map_err(|e| EngineError::Backend(e.to_string()))?;
    // The wide FP8 copies serve only steps of 9-64 rows: decode batches past 8 and the
    // verify. Without either, they would be 1 byte per weight of GPU memory for nothing.
    if !plan.decodes_wide_rows(spec.is_some()) {
        opts.tuning.wide_fp8_copies = false;
    }
    let draft = match spec {
        None => None,
        Some(spec) => Some((build_draft(cfg, &weights, plan, spec)?, spec.cfg)),
    };
    let mut b =
        crate::model::cuda::CudaBackend::new(cfg.clone(), &weights, plan.kv_pages, plan.block_size, &opts)?;
    drop(weights);
    if let Some((d, tree)) = draft {
        b = b.with_draft(d, tree, plan.max_batch)?;
    }
    if plan.fp8_prefill == Some(crate::plan::Fp8Prefill::Bf16Copy) {
        let bytes = b.keep_fp8_prefill_copies()?;
        tracing::info!(bytes, "FP8 projections: bf16 copies kept for prefill");
    }
    plan.decode_graphs = b.capture_decode_graphs(plan.max_batch)?;
    tracing::info!(sizes = ?plan.decode_graphs, "captured decode graphs");
    plan.gpu = Some(b.gpu_name().to_string());
    plan.cuda = Some(b.tuning());
    Ok(Box::new(b))
}

/// The CPU reference backend, speculating when `spec` asks for a draft.
fn cpu_backend(
    cfg: &ModelConfig,
    weights: ModelWeights,
    plan: &Plan,
    spec: Option<&crate::spec::SpeculativeArgs>,
) -> Result<Box<dyn Backend>> {
    // The draft is built first: a test draft may copy the target's weights.
    let draft = match spec {
        None => None,
        Some(spec) => Some((build_draft(cfg, &weights, plan, spec)?, spec.cfg)),
    };
    let cpu = CpuBackend::new(cfg.clone(), weights, plan.kv_pages, plan.block_size);
    Ok(match draft {
        None => Box::new(cpu),
        Some((d, tree)) => Box::new(cpu.with_draft(d, tree)?),
    })
}

fn build_draft(
    cfg: &ModelConfig,
    weights: &ModelWeights,
    plan: &Plan,
    spec: &crate::spec::SpeculativeArgs,
) -> Result<Box<dyn crate::spec::Draft>> {
    let ctx = crate::spec::DraftContext {
        target: cfg,
        weights,
        num_pages: plan.kv_pages,
        block_size: plan.block_size,
    };
    crate::spec::build_draft(&spec.draft, &ctx)
}

struct AliveGuard(Arc<AtomicBool>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.store(false, Relaxed);
    }
}
