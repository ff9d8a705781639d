use crate::components::RunsTable;
use crate::server_fns::{list_comparisons, list_runs};
use bench_types::api::REFERENCE_SLUG;
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn HomePage() -> impl IntoView {
    let runs = Resource::new(|| (), |_| list_runs(10, None));
    // The reference study (when loaded) and the newest comparisons: one click each.
    let reference = Resource::new(|| (), |_| list_comparisons(1, None, Some(REFERENCE_SLUG.to_string())));
    let recent = Resource::new(|| (), |_| list_comparisons(5, None, None));
    view! {
        <Title text="latlab"/>
        <section class="hero">
            <h1>"latlab"</h1>
            <p>"A latency lab for LLM serving: benchmark latlab's native engine or any OpenAI-compatible server with the semantics of "
               <code>"vllm bench serve"</code>", keep every request's timings, compare runs."</p>
            <Suspense fallback=|| ()>
                {move || reference.get().and_then(|r| r.ok()).and_then(|l| l.into_iter().next()).map(|c| view! {
                    <p class="reference">
                        <a class="button" href=format!("/c/{}", c.slug) data-testid="reference-study">"Open the reference study"</a>
                        " "<span class="muted">{format!("{} · {} runs", c.title, c.runs)}</span>
                    </p>
                })}
            </Suspense>
        </section>
        <Suspense fallback=|| view! { <p>"Loading runs…"</p> }>
            {move || runs.get().map(|r| match r {
                Err(e) => view! { <p class="error">{format!("Could not load runs: {e}")}</p> }.into_any(),
                Ok(list) if list.is_empty() => view! {
                    <section class="empty" data-testid="empty-state">
                        <h2>"No runs yet"</h2>
                        <p>"Start a benchmark: pick a target (latlab's engine or a server URL), a model, a dataset and the concurrency levels to sweep."</p>
                        <p><a class="button" href="/runs/new">"Create your first run"</a></p>
                    </section>
                }.into_any(),
                Ok(list) => view! {
                    <section>
                        <h2>"Recent runs"</h2>
                        <RunsTable runs=list/>
                        <p><a href="/runs">"All runs"</a>" · "<a href="/runs/new">"New run"</a></p>
                    </section>
                }.into_any(),
            })}
        </Suspense>
        <Suspense fallback=|| ()>
            {move || recent.get().and_then(|r| r.ok()).filter(|l| !l.is_empty()).map(|list| view! {
                <section>
                    <h2>"Recent comparisons"</h2>
                    <ul class="comparison-list">
                        {list.into_iter().map(|c| view! {
                            <li><a href=format!("/c/{}", c.slug)>{c.title.clone()}</a>" "<span class="muted">{format!("{} runs", c.runs)}</span></li>
                        }).collect_view()}
                    </ul>
                    <p><a href="/comparisons">"All comparisons"</a></p>
                </section>
            })}
        </Suspense>
    }
}
