use crate::components::RunsTable;
use crate::server_fns::list_runs;
use leptos::prelude::*;

#[component]
pub fn HomePage() -> impl IntoView {
    let runs = Resource::new(|| (), |_| list_runs(10, None));
    view! {
        <section class="hero">
            <h1>"latlab"</h1>
            <p>"A latency lab for LLM serving: benchmark latlab's native engine or any OpenAI-compatible server with the semantics of "
               <code>"vllm bench serve"</code>", keep every request's timings, compare runs."</p>
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
    }
}
