//! One run: its settings, live progress while it goes (polled once a second), cancel,
//! the engine's log, and vLLM's result block once it finished.

use crate::components::spec_decode::{describe_request, requested};
use crate::components::{ResultBlock, SpecDecodePanel, StatusBadge};
use crate::format::{derived_mean_latency_s, elapsed, f2, strip_ansi, when};
use crate::pages::NotFound;
use crate::server_fns::{CancelRun, get_run, get_run_comparisons, get_run_log};
use bench_types::{RunProgress, RunStatus, RunView, Target};
use leptos::prelude::*;
use leptos_meta::Title;
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
    let live = move || run.get().and_then(|r| r.ok().flatten()).is_some_and(|r| !r.status.is_terminal());
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
    let title = if run.spec.label.is_empty() {
        format!("Run #{}", run.id)
    } else {
        format!("Run #{}: {}", run.id, run.spec.label)
    };
    let spec_json = serde_json::to_string_pretty(&run.spec).unwrap_or_default();
    let s = &run.spec;
    let mut rows: Vec<(&str, String)> = vec![("Target", run.target_description.clone())];
    if let bench_types::Target::Native(n) = &s.target {
        // No flag serves the checkpoint as stored: bf16, or FP8 for an FP8 checkpoint.
        let weights = match (n.quantization, n.device) {
            (bench_types::Quantization::None, bench_types::Device::Cpu) => {
                "as stored, computed in f32 (the CPU reference engine)"
            }
            (bench_types::Quantization::None, _) => {
                "as stored (bf16 unless the checkpoint is FP8; f32 if it runs on the CPU)"
            }
            (bench_types::Quantization::Fp8, _) => "FP8 (128x128 block scales, quantized at load)",
        };
        rows.push(("Weights", weights.to_string()));
    }
    let speculative = requested(&run).cloned();
    if let Some(s) = &speculative {
        rows.push(("Speculative decoding", describe_request(s)));
    }
    rows.extend([
        ("Model", s.model.clone()),
        ("Backend", s.backend.as_str().to_string()),
        ("Dataset", format!("{} × {} prompts, seed {}", s.dataset.name(), s.num_prompts, s.seed)),
        ("Load", s.load_label()),
        (
            "ignore_eos",
            match (s.sampling.ignore_eos, s.sends_ignore_eos()) {
                (false, true) => "true (always, for the random dataset, as vLLM does)".to_string(),
                (on, _) => on.to_string(),
            },
        ),
        (
            "Temperature",
            s.sampling.temperature.map(|t| t.to_string()).unwrap_or_else(|| "server default".into()),
        ),
        ("Created", when(&run.created_at)),
    ]);
    let imported = match &run.spec.target {
        Target::Imported(t) => Some(t.clone()),
        _ => None,
    };
    // An imported run was not run here: its duration is the source's benchmark duration.
    let timing = match (&imported, &run.started_at, &run.finished_at) {
        (Some(t), _, _) => Some(format!(
            "imported from {}{}",
            t.source,
            run.summary
                .as_ref()
                .map(|s| format!("; the benchmark ran {:.1} s", s.duration_s))
                .unwrap_or_default()
        )),
        (None, Some(a), Some(b)) => Some(format!("started {}, ran {}", when(a), elapsed(a, b))),
        (None, Some(a), None) => Some(format!("started {}", when(a))),
        _ => None,
    };
    let missing = imported.as_ref().map(|t| t.missing.clone()).unwrap_or_default();
    let derived = run
        .summary
        .as_ref()
        .filter(|_| missing.iter().any(|m| m == "e2el" || m == "e2el.mean"))
        .and_then(|s| derived_mean_latency_s(s, &run.spec))
        .map(|v| format!("{v:.2} s"));
    // A run that succeeded can still carry a note (some requests failed); a cancelled one
    // says what it kept. Only a failure is shown as an error.
    let note_class = match run.status {
        RunStatus::Failed | RunStatus::Interrupted => "error",
        _ => "warning-note",
    };
    let page_title = format!("{title} · latlab");
    // Where the block's counts come from, when it is not obvious.
    let counts = run.summary.as_ref().filter(|_| imported.is_none()).map(|sm| {
        let input = match sm.server_input_tokens {
            Some(n) => format!("Total input tokens: {} from the dataset's prompt lengths (printed above, as vLLM v0.11); {n} by the server's usage.prompt_tokens.", sm.total_input_tokens),
            None => format!("Total input tokens: {} from the dataset's prompt lengths; the server sent no prompt counts.", sm.total_input_tokens),
        };
        let itl = sm.token_itl_source.map(|t| format!(" Token-level ITL counts tokens by {}.", t.describe())).unwrap_or_default();
        view! { <p class="muted counts" data-testid="count-sources">{input}{itl}</p> }
    });
    let comparisons = Resource::new(move || (), move |_| get_run_comparisons(id));
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
    let has_engine =
        !matches!(run.spec.target, bench_types::Target::External { .. } | bench_types::Target::Imported(_));
    let log = Resource::new(move || tick.get(), move |_| get_run_log(id));
    view! {
        <Title text=page_title/>
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
        {run.error.clone().map(|e| view! { <p class=note_class data-testid="run-error">{e}</p> })}
        {run.progress.clone().filter(|_| !run.status.is_terminal()).map(|p| view! { <ProgressPanel p/> })}
        <Suspense fallback=|| ()>
            {move || comparisons.get().and_then(|r| r.ok()).filter(|l| !l.is_empty()).map(|list| view! {
                <p class="backlinks" data-testid="run-comparisons">"In "
                    {list.into_iter().enumerate().map(|(i, c)| view! {
                        {(i > 0).then_some(", ")}<a href=format!("/c/{}", c.slug)>{c.title.clone()}</a>
                    }).collect_view()}
                </p>
            })}
        </Suspense>
        <crate::components::AnnotationsPanel action=format!("/runs/{id}/annotations") tags=run.tags.clone() note=run.note.clone() link_tags=true/>
        <crate::components::RunManage id archived_at=run.archived_at terminal=run.status.is_terminal()/>
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
                {rerun(&run)}
                <p><a href=format!("/api/runs/{}", run.id)>"This run as JSON"</a>" · "
                   <a href=format!("/api/runs/{}/requests", run.id)>"every request (JSON)"</a>
                   {run.summary.is_some().then(|| view! {
                       " · " <a href=format!("/api/runs/{}/target", run.id)>"what the target said about itself"</a>
                   })}</p>
            </section>
            <section>
                <h2>"Result"</h2>
                {match run.summary.clone() {
                    Some(summary) => view! { <ResultBlock summary missing/> }.into_any(),
                    None => view! { <p class="muted">"No result yet."</p> }.into_any(),
                }}
                {counts}
                {speculative.filter(|_| run.summary.is_some()).map(|requested| view! {
                    <SpecDecodePanel requested result=run.speculative.clone()/>
                })}
                {derived.map(|d| view! {
                    <p class="derived" data-testid="derived-latency">"Mean request latency: "<strong>{d}</strong>
                    " "<span class="badge mark" title="not measured: benchmark duration × concurrency ÷ requests, as the source publishes no end-to-end latency">"derived"</span></p>
                })}
            </section>
        </div>
        {run.summary.is_some().then(|| view! { <crate::components::run_charts::RunCharts id=run.id/> })}
        {(run.status.is_terminal() && imported.is_none()).then(|| view! { <crate::components::telemetry::TelemetryPanel id=run.id/> })}
        {has_engine.then(|| view! {
            <details class="engine-log">
                <summary>"Engine log"</summary>
                <Transition fallback=|| ()>
                    {move || log.get().map(|l| match l {
                        Ok(Some(text)) if !text.is_empty() => view! { <pre class="mono log" data-testid="engine-log">{strip_ansi(&text)}</pre> }.into_any(),
                        Ok(_) => view! { <p class="muted">"No output yet."</p> }.into_any(),
                        Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                    })}
                </Transition>
            </details>
        })}
    }
}

/// "Re-run": the new-run form filled in with this run's settings, or why it cannot be.
fn rerun(run: &RunView) -> impl IntoView + use<> {
    match crate::run_form::RunForm::from_spec(&run.spec) {
        Ok(_) => view! {
            <p><a class="button" data-testid="rerun" href=format!("/runs/new?from={}", run.id)>"Re-run"</a>
            " "<span class="muted">"opens the new-run form with these settings"</span></p>
        }
        .into_any(),
        Err(why) => {
            view! { <p class="muted" data-testid="rerun-unavailable">{format!("No re-run from the form: {why}.")}</p> }
                .into_any()
        }
    }
}
