//! `latlab-bench`: thin CLI over the `bench` library. Usage errors print one line and exit
//! 2 (clap's convention); run errors print one line and exit 1.

mod cli;
mod cli_save;
mod cli_spec;

use bench::{Phase, Progress, RunOptions, render_text, run_sweep_with};
use clap::Parser;
use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    let spec = match args.to_spec() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("latlab-bench: {e:#}");
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("latlab-bench: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(&args, spec)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("latlab-bench: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn run(args: &cli::Args, spec: bench_types::RunSpec) -> anyhow::Result<ExitCode> {
    // A result folder that cannot be made fails now, not after the whole benchmark.
    if let (true, Some(d)) = (args.saves(), &args.result_dir) {
        std::fs::create_dir_all(d).map_err(|e| anyhow::anyhow!("cannot create --result-dir {d}: {e}"))?;
    }
    if !args.quiet {
        for n in args.flag_notes() {
            eprintln!("note: {n}");
        }
    }
    let req = args.request_options()?;
    let (tx, rx) = tokio::sync::watch::channel(Progress::default());
    // The key comes from the spec's api_key_env when it names one, else OPENAI_API_KEY (vLLM's).
    let (base_url, key_env) = match &spec.target {
        bench_types::Target::External { base_url, api_key_env }
            if args.base_url.is_none() && args.spec.is_some() =>
        {
            (base_url.clone(), api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into()))
        }
        bench_types::Target::External { api_key_env: Some(env), .. } => (args.base_url(), env.clone()),
        _ => (args.base_url(), "OPENAI_API_KEY".into()),
    };
    let opts = RunOptions { api_key: std::env::var(key_env).ok(), progress: Some(tx), ..Default::default() };
    let cancel = opts.cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    let bar = (!args.quiet && !args.json && !args.disable_tqdm && std::io::stderr().is_terminal())
        .then(|| tokio::spawn(progress_bar(rx)));
    let (reports, err) = run_sweep_with(&spec, &base_url, opts, &req).await;
    if let Some(b) = bar {
        b.abort();
        eprintln!();
    }
    let metric_refs = args.metrics()?;
    for r in &reports {
        if !args.quiet && !args.json {
            for n in &r.notes {
                eprintln!("note: {n}");
            }
            println!("{}", render_text(&r.summary, &metric_refs));
        }
        if args.saves() {
            cli_save::save_result(args, r, &metric_refs)?;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string(&reports)?);
    }
    if let Some(path) = &args.report_file {
        let body = if reports.len() == 1 {
            serde_json::to_string_pretty(&reports[0])?
        } else {
            serde_json::to_string_pretty(&reports)?
        };
        std::fs::write(path, body).map_err(|e| anyhow::anyhow!("cannot write --report-file {path}: {e}"))?;
    }
    match err {
        Some(e) => Err(e.into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

async fn progress_bar(mut rx: tokio::sync::watch::Receiver<Progress>) {
    use std::io::Write;
    loop {
        if rx.changed().await.is_err() {
            return;
        }
        let p = rx.borrow_and_update().clone();
        let done = p.completed + p.failed;
        let width = 30usize;
        let filled = if p.total > 0 { (done as usize * width) / p.total as usize } else { 0 };
        let phase = match p.phase {
            Phase::Preparing => "preparing",
            Phase::Warmup => "warm-up",
            Phase::Measuring => "running",
            Phase::Finished => "done",
        };
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
        eprint!(
            "\r{phase:>9} [{}{}] {done}/{} ({} failed) {:.1}s  TTFT {} ms  TPOT {} ms   ",
            "#".repeat(filled),
            ".".repeat(width - filled.min(width)),
            p.total,
            p.failed,
            p.elapsed_s,
            fmt(p.rolling_ttft_ms),
            fmt(p.rolling_tpot_ms)
        );
        let _ = std::io::stderr().flush();
        // At most ~10 redraws a second, whatever the request rate.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
