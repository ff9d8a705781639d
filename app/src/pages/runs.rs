use crate::components::RunsTable;
use crate::server_fns::list_runs;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

const PAGE: i64 = 50;

/// All runs, newest first, 50 a page (`?before=<id>` for older ones).
#[component]
pub fn RunsPage() -> impl IntoView {
    let query = use_query_map();
    let before = move || query.read().get("before").and_then(|b| b.parse::<i64>().ok());
    let runs = Resource::new(before, |b| list_runs(PAGE, b));
    view! {
        <h1>"Runs"</h1>
        <Suspense fallback=|| view! { <p>"Loading runs…"</p> }>
            {move || runs.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load runs: {e}")}</p> }.into_any(),
                Ok(list) if list.is_empty() => view! {
                    <p class="empty">"No runs here. " <a href="/runs/new">"Create one"</a></p>
                }.into_any(),
                Ok(list) => {
                    let older = (list.len() as i64 == PAGE).then(|| list.last().map(|r| r.id)).flatten();
                    view! {
                        <RunsTable runs=list/>
                        {older.map(|id| view! { <p><a href=format!("/runs?before={id}")>"Older runs →"</a></p> })}
                    }.into_any()
                }
            })}
        </Suspense>
    }
}
