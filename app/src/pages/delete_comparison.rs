//! `/c/{slug}/delete`: the question before a comparison is deleted, as its own page so that
//! it works without JavaScript. "Delete" posts the form (`server::run_forms::delete_comparison`);
//! "Cancel" goes back to the comparison. Its runs stay: deleting the comparison is what
//! lets a run that only it listed be deleted (`db::run_removal` says why a listed run
//! cannot be).

use crate::pages::NotFound;
use crate::server_fns::get_comparison;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

#[component]
pub fn DeleteComparisonPage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let error = move || use_query_map().read().get("error");
    let data = Resource::new(slug, get_comparison);
    view! {
        <Suspense fallback=|| view! { <p>"Loading comparison…"</p> }>
            {move || data.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load the comparison: {e}")}</p> }.into_any(),
                Ok(None) => view! { <NotFound/> }.into_any(),
                Ok(Some(c)) => {
                    let back = format!("/c/{}", c.slug);
                    let runs = c.runs.len();
                    view! {
                        <Title text=format!("Delete {} · latlab", c.title)/>
                        <h1>{format!("Delete the comparison “{}”?", c.title)}</h1>
                        <p data-testid="delete-question">{format!(
                            "Its permalink {back} stops working for everyone it was shared with, and its chart settings, tags and note are removed; this cannot be undone. Its {runs} run{} stay on the runs list.",
                            if runs == 1 { "" } else { "s" }
                        )}</p>
                        <form method="post" action=format!("/c/{}/delete", c.slug) class="inline-form">
                            <button type="submit" class="danger" id="delete-confirm">"Delete"</button>
                        </form>
                        " " <a href=back id="delete-cancel">"Cancel"</a>
                        <p class="error" role="alert" data-testid="delete-error">{error}</p>
                    }.into_any()
                }
            })}
        </Suspense>
    }
}
