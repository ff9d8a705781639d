use bench_types::ValidationErrors;
use bench_types::run_list::RunListPage;
use leptos::prelude::*;

/// The runs list for a query string (`engine=vllm&sort=ttft&page=2`); a bad parameter
/// comes back as `Ok(Err(..))`, naming it.
#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn query_runs(query: String) -> Result<Result<RunListPage, ValidationErrors>, ServerFnError> {
    let pairs = crate::components::run_charts::view::query_pairs(&query);
    let q = match bench_types::RunListQuery::parse(&pairs, false) {
        Ok(q) => q,
        Err(e) => return Ok(Err(e)),
    };
    super::store()?.list_runs(q).await.map(Ok).map_err(super::internal)
}
