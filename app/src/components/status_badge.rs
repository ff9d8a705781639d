use bench_types::RunStatus;
use leptos::prelude::*;

#[component]
pub fn StatusBadge(status: RunStatus) -> impl IntoView {
    view! { <span class=format!("badge status-{}", status.as_str())>{status.as_str()}</span> }
}
