//! Every comparison, newest first: title, runs, their engines, when made; 50 a page
//! (`?before=<slug>` for older ones). Runs are compared from the runs list.

use crate::format::when;
use crate::server_fns::list_comparisons;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

const PAGE: i64 = 50;

#[component]
pub fn ComparisonsPage() -> impl IntoView {
    let query = use_query_map();
    let before = move || query.read().get("before");
    let list = Resource::new(before, |b| list_comparisons(PAGE, b, None));
    // After a delete (`server::run_forms::delete_comparison` redirects here).
    let deleted = move || {
        query.read().get("deleted").map(|slug| {
            view! { <p class="notice" role="status" data-testid="deleted-note">{format!("The comparison /c/{slug} was deleted; its runs are still on the runs list.")}</p> }
        })
    };
    view! {
        <Title text="Comparisons · latlab"/>
        <h1>"Comparisons"</h1>
        {deleted}
        <p class="muted">"A comparison is a permalink to runs side by side. A sweep makes one; so does picking runs on the "<a href="/runs">"runs list"</a>"."</p>
        <Suspense fallback=|| view! { <p>"Loading comparisons…"</p> }>
            {move || list.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load comparisons: {e}")}</p> }.into_any(),
                Ok(list) if list.is_empty() => view! {
                    <p class="empty">"No comparisons yet. Run a concurrency sweep, or pick runs on the "<a href="/runs">"runs list"</a>" and compare them."</p>
                }.into_any(),
                Ok(list) => {
                    let older = (list.len() as i64 == PAGE).then(|| list.last().map(|c| c.slug.clone())).flatten();
                    let rows = list.into_iter().map(|c| {
                        let live = (c.live > 0).then(|| view! { <span class="badge status-running">{format!("{} running", c.live)}</span> });
                        view! {
                            <tr data-slug=c.slug.clone()>
                                <td><a href=format!("/c/{}", c.slug)>{c.title.clone()}</a>" "{live}</td>
                                <td class="num">{c.runs}</td>
                                <td class="mono">{c.engines.join(", ")}</td>
                                <td class="muted">{when(&c.created_at)}</td>
                            </tr>
                        }
                    }).collect_view();
                    view! {
                        <div class="table-wrap">
                            <table class="runs comparisons">
                                <thead><tr><th>"Comparison"</th><th>"Runs"</th><th>"Engines"</th><th>"Created"</th></tr></thead>
                                <tbody>{rows}</tbody>
                            </table>
                        </div>
                        {older.map(|s| view! { <p><a href=format!("/comparisons?before={s}")>"Older comparisons →"</a></p> })}
                    }.into_any()
                }
            })}
        </Suspense>
    }
}
