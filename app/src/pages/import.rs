//! The import form: results measured elsewhere (a vLLM `--save-result` JSON file, or
//! printed "Serving Benchmark Result" blocks pasted as text) with the configuration they
//! ran with. The fields are those of `bench_import::ImportConfig`, the same request type
//! `POST /api/imports` takes, and the server stores them through the same code.
//!
//! Why a plain `multipart/form-data` form posted to an axum route (`POST /import`, in
//! `server::import_page`) and not a server function like the new-run form:
//! - a file input only sends its content in a multipart body, so without JavaScript only
//!   multipart can upload the file; with it the browser streams the file as is (up to the
//!   import limit, 64 MiB), where a server function body is capped at 1 MiB;
//! - a refused server-function post without JavaScript redirects back to the page and
//!   loses what was pasted; the route instead renders this page again with the error and
//!   every entered value (provided as `ImportFormState` context, carried to the browser
//!   by `SharedValue` so hydration sees the same values);
//! - one path for everybody: JavaScript adds nothing here that the browser lacks.
//!
//! Writes are guarded like every other write (`server::auth::require_for_writes`: bearer
//! token, or session cookie from a same-origin page).

use bench_import::ImportConfig;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// Where the form posts.
pub const IMPORT_PATH: &str = "/import";

/// What the form shows: empty on a plain visit; after a refused post, what was entered
/// and why the import was refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportFormState {
    pub config: ImportConfig,
    pub comparison_title: String,
    /// The pasted text.
    pub text: String,
    /// Name of the file the refused post carried (a browser cannot refill a file input).
    pub file_name: Option<String>,
    pub error: Option<String>,
}

/// Escapes text for use as an element's inner HTML.
fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

#[component]
fn TextField(
    label: &'static str,
    /// The `ImportConfig` field (or `comparison_title`) this input feeds.
    name: &'static str,
    value: String,
    #[prop(optional)] hint: &'static str,
    #[prop(optional)] placeholder: &'static str,
    #[prop(optional)] required: bool,
) -> impl IntoView {
    let id = format!("i-{name}");
    view! {
        <div class="field">
            <label for=id.clone()>{label}</label>
            <input id=id name=name value=value placeholder=placeholder required=required/>
            {(!hint.is_empty()).then(|| view! { <small class="hint">{hint}</small> })}
        </div>
    }
}

#[component]
pub fn ImportPage() -> impl IntoView {
    // On the server: the refused post's state when `POST /import` renders the page, else
    // empty. In the browser: the server's value while hydrating, empty after navigating.
    let state = SharedValue::new(|| use_context::<ImportFormState>().unwrap_or_default()).into_inner();
    let ImportFormState { config: c, comparison_title, text, file_name, error } = state;
    let opt = |v: Option<String>| v.unwrap_or_default();
    // Effects run only in the browser: marks the form once the page is hydrated (the
    // browser tests wait for it; the form itself needs no JavaScript).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let file_note = file_name
        .map(|n| view! { <small class="hint">{format!("You had chosen {n}: choose it again.")}</small> });
    view! {
        <h1>"Import results"</h1>
        <p>"Results measured elsewhere: a " <code>"vllm bench serve --save-result"</code>
           " JSON file, or the " <code>"Serving Benchmark Result"</code>
           " block(s) vLLM prints. Each block becomes a run marked imported; several blocks make a comparison."</p>
        <p class="error import-error" role="alert" data-testid="import-error">{error}</p>
        <form class="run-form" method="post" action=IMPORT_PATH enctype="multipart/form-data"
            data-hydrated=move || hydrated.get().then_some("true")>
            <fieldset>
                <legend>"Result"</legend>
                <div class="field">
                    <label for="i-file">"File (JSON or .txt)"</label>
                    <input id="i-file" name="file" type="file" accept=".json,.txt,application/json,text/plain"/>
                    {file_note}
                </div>
                <div class="field">
                    <label for="i-text">"Or paste the block"</label>
                    <textarea id="i-text" name="text" rows="14" class="mono" spellcheck="false"
                        placeholder="============ Serving Benchmark Result ============"
                        inner_html=escape_html(&text)></textarea>
                    <small class="hint">"One or the other. Text starting with { is read as --save-result JSON."</small>
                </div>
            </fieldset>
            <fieldset>
                <legend>"Configuration"</legend>
                <TextField label="Engine" name="engine" value=c.engine required=true placeholder="e.g. vLLM"
                    hint="Required: the serving engine that was measured."/>
                <TextField label="Model" name="model" value=opt(c.model) placeholder="e.g. Qwen/Qwen3-8B"
                    hint="Required for text blocks; a JSON file names its model."/>
                <TextField label="Label" name="label" value=c.label hint="Optional; shown in lists and charts."/>
                <TextField label="Hardware" name="hardware" value=opt(c.hardware) placeholder="e.g. 1x NVIDIA H100 SXM"/>
                <TextField label="Engine version" name="engine_version" value=opt(c.engine_version) placeholder="e.g. 0.11.0"/>
                <TextField label="Optimization" name="optimization" value=opt(c.optimization) placeholder="e.g. FP8 + EAGLE3"/>
                <TextField label="Variant" name="variant" value=opt(c.variant)/>
                <TextField label="Command" name="command" value=opt(c.command) placeholder="e.g. vllm serve Qwen/Qwen3-8B ..."
                    hint="How the server was started."/>
                <TextField label="Source" name="source" value=opt(c.source) placeholder="default: upload"
                    hint="Where the numbers come from (a URL, a study)."/>
                <TextField label="Comparison title" name="comparison_title" value=comparison_title
                    hint="Optional: groups the imported runs in a comparison with this title."/>
            </fieldset>
            <button type="submit" id="submit-import">"Import"</button>
        </form>
    }
}
