use bench_types::ComparisonSummary;
use leptos::prelude::*;

/// Comparisons newest first; `before` (a slug) pages backwards; `only` picks one slug.
#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn list_comparisons(
    limit: i64,
    before: Option<String>,
    only: Option<String>,
) -> Result<Vec<ComparisonSummary>, ServerFnError> {
    let limit = limit.clamp(1, 200);
    super::store()?.comparisons(limit, before, only).await.map_err(super::internal)
}
