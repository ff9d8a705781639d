use bench_types::ComparisonRef;
use leptos::prelude::*;

/// The comparisons a run belongs to (its page links back to them).
#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_run_comparisons(id: i64) -> Result<Vec<ComparisonRef>, ServerFnError> {
    super::store()?.comparisons_of_run(id).await.map_err(super::internal)
}
