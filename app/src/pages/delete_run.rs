//! `/runs/{id}/delete`: the question before a run is deleted, as its own page so that it
//! works without JavaScript. "Delete" posts the form (`server::run_forms::delete`);
//! "Cancel" goes back to the run. A run that a comparison lists, or that is still queued
//! or running, is not offered for deletion: the page says why and what to do instead (the
//! server refuses it anyway, `db::run_removal` says why).

use crate::pages::NotFound;
use crate::server_fns::{get_run, get_run_comparisons};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

#[component]
pub fn DeleteRunPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").and_then(|s| s.parse::<i64>().ok());
    let error = move || use_query_map().read().get("error");
    let data = Resource::new(id, |id| async move {
        let Some(id) = id else { return Ok(None) };
        let Some(run) = get_run(id).await? else { return Ok(None) };
        let comparisons = get_run_comparisons(id).await?;
        Ok::<_, ServerFnError>(Some((run, comparisons)))
    });
    view! {
        <Suspense fallback=|| view! { <p>"Loading run…"</p> }>
            {move || data.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load the run: {e}")}</p> }.into_any(),
                Ok(None) => view! { <NotFound/> }.into_any(),
                Ok(Some((run, comparisons))) => {
                    let id = run.id;
                    let back = format!("/runs/{id}");
                    let title = if run.spec.label.is_empty() { format!("run #{id}") } else { format!("run #{id} ({})", run.spec.label) };
                    let body = if !run.status.is_terminal() {
                        view! {
                            <p data-testid="delete-refused">{format!("Run #{id} is {}: cancel it first, then delete it once it has stopped.", run.status)}</p>
                            <p><a href=back.clone() id="delete-cancel">"Back to the run"</a></p>
                        }.into_any()
                    } else if !comparisons.is_empty() {
                        view! {
                            <p data-testid="delete-refused">{format!("Run #{id} is in {} comparison(s); a comparison keeps every run it shows, so this run cannot be deleted. Archive it instead: it leaves the runs list and stays in its comparisons. Or delete those comparisons first (each page has a delete link).", comparisons.len())}</p>
                            <ul>{comparisons.into_iter().map(|c| view! { <li><a href=format!("/c/{}", c.slug)>{c.title}</a></li> }).collect_view()}</ul>
                            <form method="post" action=format!("/runs/{id}/archive") class="inline-form">
                                <input type="hidden" name="archived" value="true"/>
                                <button type="submit" id="delete-archive-instead">"Archive instead"</button>
                            </form>
                            " " <a href=back.clone() id="delete-cancel">"Cancel"</a>
                        }.into_any()
                    } else {
                        let records = run.summary.as_ref().map(|s| format!("{} request records, ", s.completed + s.failed)).unwrap_or_default();
                        view! {
                            <p data-testid="delete-question">{format!("Delete {title}? Its settings, result, {records}telemetry and engine log are removed for good; this cannot be undone. To only hide it from the runs list, archive it instead.")}</p>
                            <form method="post" action=format!("/runs/{id}/delete") class="inline-form">
                                <button type="submit" class="danger" id="delete-confirm">"Delete"</button>
                            </form>
                            " " <a href=back.clone() id="delete-cancel">"Cancel"</a>
                        }.into_any()
                    };
                    view! {
                        <Title text=format!("Delete run #{id} · latlab")/>
                        <h1>{format!("Delete run #{id}?")}</h1>
                        {body}
                        <p class="error" role="alert" data-testid="delete-error">{error}</p>
                    }.into_any()
                }
            })}
        </Suspense>
    }
}
