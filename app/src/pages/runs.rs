//! All runs: filtered by engine, model, hardware, status, tag and free text, sorted by any
//! column, paged. The whole view lives in the URL (`bench_types::RunListQuery`), so a list
//! is a permalink and the filter form is a plain GET form that works without JavaScript.

use crate::components::RunsTable;
use crate::server_fns::query_runs;
use bench_types::run_list::{Archived, RunListPage};
use bench_types::{RunListQuery, RunStatus};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// Where the "compare selected" form posts (a plain form: `server::compare_form`).
pub const COMPARE_PATH: &str = "/compare";

/// The parameters a list view reads from the URL.
const KEYS: [&str; 12] = [
    "engine", "model", "hardware", "status", "tag", "q", "archived", "sort", "dir", "page", "per_page",
    "before",
];

/// Engines the filter offers (the `runs.engine` column's values).
const ENGINES: [(&str, &str); 5] = [
    ("vllm", "vLLM"),
    ("sglang", "SGLang"),
    ("trtllm", "TensorRT-LLM"),
    ("native", "latlab native"),
    ("external", "external server"),
];

#[component]
pub fn RunsPage() -> impl IntoView {
    let query = use_query_map();
    let parsed = Memo::new(move |_| {
        let m = query.read();
        let pairs: Vec<(String, String)> =
            KEYS.iter().filter_map(|k| m.get(k).map(|v| (k.to_string(), v))).collect();
        RunListQuery::parse(&pairs, false)
    });
    #[cfg(feature = "ssr")]
    if let (Err(_), Some(resp)) = (parsed.get_untracked(), use_context::<leptos_axum::ResponseOptions>()) {
        resp.set_status(http::StatusCode::BAD_REQUEST);
    }
    let runs = Resource::new(
        move || parsed.get(),
        |p| async move {
            let q = p.map_err(|e| format!("Bad list parameter: {e}"))?;
            match query_runs(q.to_query()).await {
                Ok(Ok(page)) => Ok((q, page)),
                Ok(Err(e)) => Err(format!("Bad list parameter: {e}")),
                Err(e) => Err(format!("Could not load runs: {e}")),
            }
        },
    );
    let compare_error = move || query.read().get("compare_error");
    let deleted = move || {
        query.read().get("deleted").and_then(|d| d.parse::<i64>().ok()).map(|id| {
            view! { <p class="notice" role="status" data-testid="deleted-note">{format!("Run #{id} was deleted.")}</p> }
        })
    };
    let current = move || parsed.get().unwrap_or_default();
    view! {
        <Title text="Runs · latlab"/>
        <h1>"Runs"</h1>
        {deleted}
        {move || view! { <Filters q=current()/> }}
        <form id="compare-form" class="compare-form" method="post" action=COMPARE_PATH>
            <label for="compare-title">"Compare the selected runs as"</label>
            <input id="compare-title" name="title" type="text" maxlength="200" placeholder="title (optional)"/>
            <button type="submit" id="compare-selected">"Compare selected"</button>
            <p class="error" role="alert" data-testid="compare-error">{compare_error}</p>
        </form>
        <Transition fallback=|| view! { <p>"Loading runs…"</p> }>
            {move || runs.get().map(|r| match r {
                Err(e) => view! { <p class="error" role="alert" data-testid="list-error">{e}</p> }.into_any(),
                Ok((q, page)) if page.runs.is_empty() => {
                    let filtered = q.to_query() != RunListQuery { page: q.page, ..Default::default() }.to_query();
                    view! {
                        <p class="empty" data-testid="no-runs">
                            {if filtered || page.total > 0 { "No runs match this view. " } else { "No runs here. " }}
                            {if filtered {
                                view! { <a href="/runs">"Show all runs"</a> }.into_any()
                            } else {
                                view! { <a href="/runs/new">"Create one"</a> }.into_any()
                            }}
                        </p>
                    }.into_any()
                }
                Ok((q, page)) => view! {
                    <Pager q=q.clone() page=page.clone()/>
                    <RunsTable runs=page.runs.clone() select_form="compare-form" sort=q.clone()/>
                    <Pager q page/>
                }.into_any(),
            })}
        </Transition>
    }
}

/// The filter form: a GET to `/runs` carrying the sort along, back to page 1.
#[component]
fn Filters(q: RunListQuery) -> impl IntoView {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let engine = q.engine.clone().unwrap_or_default();
    let status = q.status.map(|s| s.as_str()).unwrap_or("");
    let engine_options = ENGINES
        .iter()
        .map(|(v, label)| view! { <option value=*v selected=engine == *v>{*label}</option> })
        .collect_view();
    let status_options = RunStatus::ALL
        .iter()
        .map(|s| view! { <option value=s.as_str() selected=status == s.as_str()>{s.as_str()}</option> })
        .collect_view();
    let archived_options = [
        (Archived::Hide, "hide archived"),
        (Archived::Include, "with archived"),
        (Archived::Only, "only archived"),
    ]
    .into_iter()
    .map(|(a, label)| view! { <option value=a.as_str() selected=q.archived == a>{label}</option> })
    .collect_view();
    let sort = (q.sort != Default::default()).then(|| q.sort.as_str());
    let dir = (q.dir != q.sort.natural_dir()).then(|| q.dir.as_str());
    let per_page = (q.per_page != bench_types::run_list::DEFAULT_PER_PAGE).then(|| q.per_page.to_string());
    view! {
        <form class="run-filters" method="get" action="/runs" role="search" data-testid="run-filters">
            <label>"Search"<input type="search" name="q" id="filter-q" value=text(&q.q) maxlength="200" placeholder="label, model, note, tag, #id"/></label>
            <label>"Engine"<select name="engine" id="filter-engine"><option value="">"any"</option>{engine_options}</select></label>
            <label>"Model"<input type="text" name="model" id="filter-model" value=text(&q.model) maxlength="200" placeholder="e.g. qwen3-8b"/></label>
            <label>"Hardware"<input type="text" name="hardware" id="filter-hardware" value=text(&q.hardware) maxlength="200" placeholder="e.g. H100"/></label>
            <label>"Status"<select name="status" id="filter-status"><option value="">"any"</option>{status_options}</select></label>
            <label>"Tag"<input type="text" name="tag" id="filter-tag" value=text(&q.tag) maxlength="200"/></label>
            <label>"Archived"<select name="archived" id="filter-archived">{archived_options}</select></label>
            {sort.map(|s| view! { <input type="hidden" name="sort" value=s/> })}
            {dir.map(|d| view! { <input type="hidden" name="dir" value=d/> })}
            {per_page.map(|p| view! { <input type="hidden" name="per_page" value=p/> })}
            <button type="submit" id="filter-apply">"Filter"</button>
            <a href="/runs" class="clear-filters">"Clear"</a>
        </form>
    }
}

/// "Runs 51–100 of 8,123 · page 2 of 163", with links to the first, previous, next and
/// last pages.
#[component]
fn Pager(q: RunListQuery, page: RunListPage) -> impl IntoView {
    let pages = page.pages(&q);
    let first = q.offset() + 1;
    let last = q.offset() + page.runs.len() as i64;
    let link = |to: u32, label: &'static str, rel: &'static str| {
        let href = q.with_page(to).href();
        view! { <a href=href rel=rel>{label}</a> }
    };
    view! {
        <nav class="pager" aria-label="pages">
            <span data-testid="list-count">{format!("Runs {first}–{last} of {} · page {} of {pages}", page.total, q.page)}</span>
            {(q.page > 1).then(|| view! { " " {link(1, "« first", "first")} " " {link(q.page - 1, "‹ previous", "prev")} })}
            {(q.page < pages).then(|| view! { " " {link(q.page + 1, "next ›", "next")} " " {link(pages, "last »", "last")} })}
        </nav>
    }
}
