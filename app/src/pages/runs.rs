use crate::components::RunsTable;
use crate::server_fns::list_runs;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// Where the "compare selected" form posts (a plain form: `server::compare_form`).
pub const COMPARE_PATH: &str = "/compare";

const PAGE: i64 = 50;

/// All runs, newest first, 50 a page (`?before=<id>` for older ones).
#[component]
pub fn RunsPage() -> impl IntoView {
    let query = use_query_map();
    let before = move || query.read().get("before").and_then(|b| b.parse::<i64>().ok());
    let runs = Resource::new(before, |b| list_runs(PAGE, b));
    let compare_error = move || query.read().get("compare_error");
    view! {
        <Title text="Runs · latlab"/>
        <h1>"Runs"</h1>
        <form id="compare-form" class="compare-form" method="post" action=COMPARE_PATH>
            <label for="compare-title">"Compare the selected runs as"</label>
            <input id="compare-title" name="title" type="text" maxlength="200" placeholder="title (optional)"/>
            <button type="submit" id="compare-selected">"Compare selected"</button>
            <p class="error" role="alert" data-testid="compare-error">{compare_error}</p>
        </form>
        <Suspense fallback=|| view! { <p>"Loading runs…"</p> }>
            {move || runs.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load runs: {e}")}</p> }.into_any(),
                Ok(list) if list.is_empty() => view! {
                    <p class="empty">"No runs here. " <a href="/runs/new">"Create one"</a></p>
                }.into_any(),
                Ok(list) => {
                    let older = (list.len() as i64 == PAGE).then(|| list.last().map(|r| r.id)).flatten();
                    view! {
                        <RunsTable runs=list select_form="compare-form"/>
                        {older.map(|id| view! { <p><a href=format!("/runs?before={id}")>"Older runs →"</a></p> })}
                    }.into_any()
                }
            })}
        </Suspense>
    }
}
