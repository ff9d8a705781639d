//! `latlab-engine`: the OpenAI-compatible server over latlab's engine, and `make-model`.

mod api_error;
mod bench_cmd;
mod cli;
mod generation;
mod metrics;
mod routes;
mod spec_metrics;
mod speculative_flags;
mod sse;
mod state;

use anyhow::Context;
use clap::Parser;
use cli::{BenchArgs, Cli, Command, MakeModelArgs, ModelFlags, ServeArgs};
use engine::plan::EngineArgs;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Serve(a) => serve(a),
        Command::MakeModel(a) => make_model(a),
        Command::Bench(a) => bench(a),
    }
}

fn make_model(a: MakeModelArgs) -> anyhow::Result<()> {
    let cfg = engine::presets::preset(&a.preset).with_context(|| {
        format!("unknown preset `{}`; known: {}", a.preset, engine::presets::PRESET_NAMES.join(", "))
    })?;
    if a.eagle3 {
        return make_eagle3_draft(&a, &cfg);
    }
    let cfg = match a.quantization {
        cli::QuantArg::None => cfg,
        cli::QuantArg::Fp8 => engine::config::ModelConfig {
            quantization: Some(engine::quant_config::QuantConfig::fp8()),
            ..cfg
        },
    };
    let tok = a.tokenizer.unwrap_or_else(engine::tokenizer::qwen3_tokenizer_dir);
    engine::checkpoint_writer::write_random_checkpoint(&cfg, a.seed, &a.out, &tok, a.max_shard_bytes)
        .with_context(|| format!("writing {}", a.out.display()))?;
    println!(
        "wrote random {} (seed {}, quantization {:?}) to {}",
        a.preset,
        a.seed,
        a.quantization,
        a.out.display()
    );
    Ok(())
}

fn make_eagle3_draft(a: &MakeModelArgs, target: &engine::config::ModelConfig) -> anyhow::Result<()> {
    anyhow::ensure!(
        matches!(a.quantization, cli::QuantArg::None),
        "--eagle3 writes a bf16 draft; --quantization does not apply to it"
    );
    let vocab = a.draft_vocab.unwrap_or_else(|| engine::spec::draft::default_draft_vocab(target));
    engine::spec::draft::writer::write_random_draft(target, vocab, a.seed, &a.out)
        .with_context(|| format!("writing {}", a.out.display()))?;
    println!(
        "wrote a random EAGLE-3 draft for {} (seed {}, draft vocab {vocab}) to {}",
        a.preset,
        a.seed,
        a.out.display()
    );
    Ok(())
}

fn bench(a: BenchArgs) -> anyhow::Result<()> {
    let most = a.batch.iter().copied().max().unwrap_or(1) as usize;
    let args = EngineArgs {
        max_batch: Some(most),
        // Every prompt in the first step: the decode window then holds decode steps only
        // (bench_cmd.rs).
        max_batched_tokens: (most * a.prompt_len).max(EngineArgs::default().max_batched_tokens),
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let handle = start_engine(&a.load, args)?;
    println!(
        "loaded {} in {:.1} s; plan {:?}",
        a.load.model,
        t.elapsed().as_secs_f64(),
        handle.shared().plan
    );
    bench_cmd::run(a, &handle)?;
    // Join the engine thread before main returns: see EngineHandle::shutdown.
    handle.shutdown().context("stopping the engine")
}

/// The engine `m` names, loaded as its flags say, with the rest of `args` as given.
fn start_engine(m: &ModelFlags, args: EngineArgs) -> anyhow::Result<engine::EngineHandle> {
    let (model, speculative) = speculative_flags::resolve(&m.model, &m.speculative)?;
    let args = EngineArgs {
        max_model_len: m.max_model_len,
        seed: m.seed,
        device: m.device.engine(),
        quantization: m.quantization.map(cli::QuantArg::engine),
        fp8_prefill: m.fp8_prefill_weights.engine(),
        speculative,
        ..args
    };
    engine::EngineHandle::start(&model, m.tokenizer.as_deref(), &args)
        .with_context(|| format!("starting the engine for --model {}", m.model))
}

fn serve(a: ServeArgs) -> anyhow::Result<()> {
    let args = EngineArgs {
        max_batch: a.max_batch,
        kv_pages: a.kv_pages,
        block_size: a.block_size,
        max_batched_tokens: a.max_batched_tokens,
        ..Default::default()
    };
    let handle = start_engine(&a.load, args)?;
    let name = a.served_model_name.unwrap_or_else(|| a.load.model.clone());
    // Kept to join the engine thread after the server stops (EngineHandle::shutdown).
    let engine = handle.clone();
    let state = state::AppState::new(handle, name);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let served = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((a.host.as_str(), a.port))
            .await
            .with_context(|| format!("binding {}:{}", a.host, a.port))?;
        let addr = listener.local_addr()?;
        // Tests and the worker read this line to find the port (with --port 0).
        println!("listening on http://{addr}");
        tracing::info!("listening on http://{addr}");
        // Nagle off: each SSE token is a small write right after the previous one (or the
        // response headers); with Nagle it waits for the client's ACK, which a delayed-ACK
        // client holds ~40 ms. Measured on the H200: HTTP TTFT 45 ms vs 14 ms in-engine.
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::warn!("TCP_NODELAY: {e}");
            }
        });
        axum::serve(listener, routes::router(state))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("serving")
    });
    // Every task, and the router's handles with them, goes with the runtime; then the
    // engine thread can be joined before main returns (Ctrl-C's graceful stop).
    drop(rt);
    if let Err(e) = engine.shutdown() {
        tracing::warn!("engine shutdown: {e}");
    }
    served
}
