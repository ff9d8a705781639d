//! One run: its settings, its status and, once finished, vLLM's result block.

use crate::components::{ResultBlock, StatusBadge};
use crate::format::{elapsed, when};
use crate::pages::NotFound;
use crate::server_fns::get_run;
use bench_types::{RunStatus, RunView};
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

#[component]
pub fn RunPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").and_then(|s| s.parse::<i64>().ok());
    let run = Resource::new(id, |id| async move {
        match id {
            Some(id) => get_run(id).await,
            None => Ok(None),
        }
    });
    view! {
        <Suspense fallback=|| view! { <p>"Loading run…"</p> }>
            {move || run.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load the run: {e}")}</p> }.into_any(),
                Ok(None) => view! { <NotFound/> }.into_any(),
                Ok(Some(run)) => view! { <RunDetail run/> }.into_any(),
            })}
        </Suspense>
    }
}

#[component]
fn RunDetail(run: RunView) -> impl IntoView {
    let title = if run.spec.label.is_empty() { format!("Run #{}", run.id) } else { format!("Run #{}: {}", run.id, run.spec.label) };
    let spec_json = serde_json::to_string_pretty(&run.spec).unwrap_or_default();
    let s = &run.spec;
    let rows: Vec<(&str, String)> = vec![
        ("Target", run.target_description.clone()),
        ("Model", s.model.clone()),
        ("Backend", s.backend.as_str().to_string()),
        ("Dataset", format!("{} × {} prompts, seed {}", s.dataset.name(), s.num_prompts, s.seed)),
        ("Load", s.load_label()),
        ("ignore_eos", s.sampling.ignore_eos.to_string()),
        ("Temperature", s.sampling.temperature.map(|t| t.to_string()).unwrap_or_else(|| "server default".into())),
        ("Created", when(&run.created_at)),
    ];
    let timing = match (&run.started_at, &run.finished_at) {
        (Some(a), Some(b)) => Some(format!("started {}, ran {}", when(a), elapsed(a, b))),
        (Some(a), None) => Some(format!("started {}", when(a))),
        _ => None,
    };
    let state_note = match run.status {
        RunStatus::Queued => Some("Queued: it starts when a worker is free."),
        RunStatus::Running => Some("Running."),
        _ => None,
    };
    view! {
        <h1>{title}</h1>
        <p><StatusBadge status=run.status/> " " {timing} " " {state_note}</p>
        {run.error.clone().map(|e| view! { <p class="error" data-testid="run-error">{e}</p> })}
        <div class="two-col">
            <section>
                <h2>"Settings"</h2>
                <table class="kv">
                    {rows.into_iter().map(|(k, v)| view! { <tr><th>{k}</th><td class="mono">{v}</td></tr> }).collect_view()}
                </table>
                <details>
                    <summary>"Full spec (JSON)"</summary>
                    <pre class="mono">{spec_json}</pre>
                </details>
                <p><a href=format!("/api/runs/{}", run.id)>"This run as JSON"</a></p>
            </section>
            <section>
                <h2>"Result"</h2>
                {match run.summary.clone() {
                    Some(summary) => view! { <ResultBlock summary/> }.into_any(),
                    None => view! { <p class="muted">"No result yet."</p> }.into_any(),
                }}
            </section>
        </div>
    }
}
