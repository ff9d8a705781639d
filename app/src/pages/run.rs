//! One run: its settings, live progress while it goes (polled once a second), cancel,
//! the engine's log, and vLLM's result block once it finished.

use crate::components::{ResultBlock, StatusBadge};
use crate::format::{elapsed, f2, when};
use crate::pages::NotFound;
use crate::server_fns::{get_run, get_run_log, CancelRun};
use bench_types::{RunProgress, RunStatus, RunView};
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

#[component]
pub fn RunPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").and_then(|s| s.parse::<i64>().ok());
    // Bumped once a second while the run is queued or running (browser only).
    let tick = RwSignal::new(0u64);
    let run = Resource::new(
        move || (id(), tick.get()),
        |(id, _)| async move {
            match id {
                Some(id) => get_run(id).await,
                None => Ok(None),
            }
        },
    );
    let live = move || {
        run.get()
            .and_then(|r| r.ok().flatten())
            .is_some_and(|r| !r.status.is_terminal())
    };
    Effect::new(move |_| {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                if live() {
                    tick.update(|t| *t += 1);
                }
            },
            std::time::Duration::from_millis(1000),
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    view! {
        <Transition fallback=|| view! { <p>"Loading run…"</p> }>
            {move || run.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load the run: {e}")}</p> }.into_any(),
                Ok(None) => view! { <NotFound/> }.into_any(),
                Ok(Some(run)) => view! { <RunDetail run tick/> }.into_any(),
            })}
        </Transition>
    }
}

#[component]
fn ProgressPanel(p: RunProgress) -> impl IntoView {
    let pct = if p.total > 0 { 100.0 * (p.completed + p.failed) as f64 / p.total as f64 } else { 0.0 };
    let rolling = |v: Option<f64>| v.map(f2).unwrap_or_else(|| "–".into());
    let failed = if p.failed > 0 { format!(" ({} failed)", p.failed) } else { String::new() };
    let counts = format!(" · {}/{} done{failed} · {:.1} s", p.completed + p.failed, p.total, p.elapsed_s);
    view! {
        <div class="progress" data-testid="progress">
            <p>
                <strong>{p.phase.clone()}</strong>
                <span>{counts}</span>
            </p>
            <div class="bar"><div class="fill" style=format!("width: {pct:.1}%")></div></div>
            <p class="muted">
                {format!("rolling mean TTFT {} ms · TPOT {} ms · worker {}", rolling(p.rolling_ttft_ms), rolling(p.rolling_tpot_ms), p.worker)}
            </p>
        </div>
    }
}

#[component]
fn RunDetail(run: RunView, tick: RwSignal<u64>) -> impl IntoView {
    let id = run.id;
    let title = if run.spec.label.is_empty() { format!("Run #{}", run.id) } else { format!("Run #{}: {}", run.id, run.spec.label) };
    let spec_json = serde_json::to_string_pretty(&run.spec).unwrap_or_default();
    let s = &run.spec;
    let mut rows: Vec<(&str, String)> = vec![("Target", run.target_description.clone())];
    if let bench_types::Target::Native(n) = &s.target {
        // No flag serves the checkpoint as stored: bf16, or FP8 for an FP8 checkpoint.
        let weights = match n.quantization {
            bench_types::Quantization::None => "as stored (bf16 unless the checkpoint is FP8)",
            bench_types::Quantization::Fp8 => "FP8 (128x128 block scales, quantized at load)",
        };
        rows.push(("Weights", weights.to_string()));
    }
    rows.extend([
        ("Model", s.model.clone()),
        ("Backend", s.backend.as_str().to_string()),
        ("Dataset", format!("{} × {} prompts, seed {}", s.dataset.name(), s.num_prompts, s.seed)),
        ("Load", s.load_label()),
        ("ignore_eos", s.sampling.ignore_eos.to_string()),
        ("Temperature", s.sampling.temperature.map(|t| t.to_string()).unwrap_or_else(|| "server default".into())),
        ("Created", when(&run.created_at)),
    ]);
    let timing = match (&run.started_at, &run.finished_at) {
        (Some(a), Some(b)) => Some(format!("started {}, ran {}", when(a), elapsed(a, b))),
        (Some(a), None) => Some(format!("started {}", when(a))),
        _ => None,
    };
    let state_note = match (run.status, run.cancel_requested) {
        (RunStatus::Queued, _) => Some("Queued: it starts when a worker is free."),
        (RunStatus::Running, true) => Some("Cancelling…"),
        _ => None,
    };
    let cancel = ServerAction::<CancelRun>::new();
    Effect::new(move |_| {
        if cancel.value().get().is_some() {
            tick.update(|t| *t += 1);
        }
    });
    let can_cancel = !run.status.is_terminal() && !run.cancel_requested;
    let has_engine = !matches!(run.spec.target, bench_types::Target::External { .. } | bench_types::Target::Imported(_));
    let log = Resource::new(move || tick.get(), move |_| get_run_log(id));
    view! {
        <h1>{title}</h1>
        // Each dynamic piece in its own element: adjacent text nodes merge in HTML and
        // would no longer match the view when the page hydrates.
        <p class="status-line">
            <StatusBadge status=run.status/>
            <span class="muted">{timing}</span>
            <span>{state_note}</span>
            {can_cancel.then(|| view! {
                <button class="secondary" id="cancel-run" on:click=move |_| { cancel.dispatch(CancelRun { id }); }>"Cancel"</button>
            })}
        </p>
        {run.error.clone().map(|e| view! { <p class="error" data-testid="run-error">{e}</p> })}
        {run.progress.clone().filter(|_| run.summary.is_none()).map(|p| view! { <ProgressPanel p/> })}
        <div class="two-col">
            <section>
                <h2>"Settings"</h2>
                // Rows inside an explicit <tbody>: the browser's parser adds one anyway,
                // and hydration must find the same tree the server wrote.
                <table class="kv"><tbody>
                    {rows.into_iter().map(|(k, v)| view! { <tr><th>{k}</th><td class="mono">{v}</td></tr> }).collect_view()}
                </tbody></table>
                <details>
                    <summary>"Full spec (JSON)"</summary>
                    <pre class="mono">{spec_json}</pre>
                </details>
                <p><a href=format!("/api/runs/{}", run.id)>"This run as JSON"</a>" · "
                   <a href=format!("/api/runs/{}/requests", run.id)>"every request (JSON)"</a>
                   {run.summary.is_some().then(|| view! {
                       " · " <a href=format!("/api/runs/{}/target", run.id)>"what the target said about itself"</a>
                   })}</p>
            </section>
            <section>
                <h2>"Result"</h2>
                {match run.summary.clone() {
                    Some(summary) => view! { <ResultBlock summary/> }.into_any(),
                    None => view! { <p class="muted">"No result yet."</p> }.into_any(),
                }}
            </section>
        </div>
        {has_engine.then(|| view! {
            <details class="engine-log">
                <summary>"Engine log"</summary>
                <Transition fallback=|| ()>
                    {move || log.get().map(|l| match l {
                        Ok(Some(text)) if !text.is_empty() => view! { <pre class="mono log" data-testid="engine-log">{text}</pre> }.into_any(),
                        Ok(_) => view! { <p class="muted">"No output yet."</p> }.into_any(),
                        Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                    })}
                </Transition>
            </details>
        })}
    }
}
