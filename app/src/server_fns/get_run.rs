use bench_types::RunView;
use leptos::prelude::*;

#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_run(id: i64) -> Result<Option<RunView>, ServerFnError> {
    super::store()?.run(id).await.map_err(super::internal)
}
