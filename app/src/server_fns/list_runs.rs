use bench_types::RunView;
use leptos::prelude::*;

/// Newest runs first; `before_id` pages backwards.
#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn list_runs(limit: i64, before_id: Option<i64>) -> Result<Vec<RunView>, ServerFnError> {
    let limit = limit.clamp(1, 200);
    super::store()?.recent_runs(limit, before_id).await.map_err(super::internal)
}
