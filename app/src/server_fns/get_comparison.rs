use bench_types::ComparisonView;
use leptos::prelude::*;

#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_comparison(slug: String) -> Result<Option<ComparisonView>, ServerFnError> {
    super::store()?.comparison(&slug).await.map_err(super::internal)
}
