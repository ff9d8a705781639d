use leptos::prelude::*;

#[server(prefix = "/sfn", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_run_log(id: i64) -> Result<Option<String>, ServerFnError> {
    super::store()?.run_log(id).await.map_err(super::internal)
}
