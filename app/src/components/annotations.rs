//! Tags and a note on a run or a comparison: shown, and edited in a plain form that posts
//! to `action` (the server's `run_forms`), so it works without JavaScript. The server
//! normalizes and checks them (`bench_types::Annotations`); a refusal comes back in the
//! URL as `annotations_error`, shown under the form.

use bench_types::RunListQuery;
use bench_types::annotations::{MAX_NOTE_CHARS, MAX_TAGS};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

#[component]
pub fn AnnotationsPanel(
    /// Where the form posts: `/runs/{id}/annotations` or `/c/{slug}/annotations`.
    action: String,
    tags: Vec<String>,
    note: String,
    /// Tags link to the runs list filtered by them (runs only).
    #[prop(optional)]
    link_tags: bool,
) -> impl IntoView {
    let error = use_query_map().read_untracked().get("annotations_error");
    let open = error.is_some();
    let shown = tags
        .iter()
        .map(|t| {
            let (t, text) = (t.clone(), t.clone());
            if link_tags {
                let href = RunListQuery { tag: Some(t.clone()), ..Default::default() }.href();
                view! { <a class="tag" href=href data-tag=t>{text}</a>" " }.into_any()
            } else {
                view! { <span class="tag" data-tag=t>{text}</span>" " }.into_any()
            }
        })
        .collect_view();
    let note_shown =
        (!note.is_empty()).then(|| view! { <p class="note" data-testid="note">{note.clone()}</p> });
    view! {
        <section class="annotations" data-testid="annotations">
            <p class="tags" data-testid="tags">{shown}</p>
            {note_shown}
            <details open=open>
                <summary>"Edit tags and note"</summary>
                <form method="post" action=action class="annotations-form">
                    <label>"Tags "
                        <input type="text" name="tags" id="annotations-tags" value=tags.join(" ")
                            placeholder=format!("up to {MAX_TAGS}, separated by spaces or commas: fp8 h100 baseline")/>
                    </label>
                    <label>"Note "
                        <textarea name="note" id="annotations-note" rows="3" maxlength=MAX_NOTE_CHARS.to_string()>{note}</textarea>
                    </label>
                    <button type="submit" id="annotations-save">"Save"</button>
                </form>
                <p class="error" role="alert" data-testid="annotations-error">{error}</p>
            </details>
        </section>
    }
}
